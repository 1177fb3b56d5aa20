import Foundation

/// One model upserted or removed by a transaction, as a store records it.
public struct ModelChange: Sendable, Hashable {
    /// The collection the model belongs to.
    public let collection: String
    /// The model's id, as its description reads.
    public let id: String
    /// The model's encoded form; `nil` when the model was removed.
    public let encoded: Data?

    /// Creates a change.
    ///
    /// - Parameters:
    ///   - collection: The collection.
    ///   - id: The model's id.
    ///   - encoded: The encoded model, or `nil` for a removal.
    public init(collection: String, id: String, encoded: Data?) {
        self.collection = collection
        self.id = id
        self.encoded = encoded
    }

    /// The relation this change sets or removes, for a change of the document's relations; `nil` for a model or a
    /// key-value.
    public var relation: Relation? {
        collection == Document.relations ? Relation(storedID: id) : nil
    }
}
