import Foundation

/// A model that a committed transaction upserted or removed, as change streams deliver it.
public struct DocumentChange: Sendable, Hashable, CustomStringConvertible {
    /// The snapshot number of the transaction's commit.
    public let snapshot: UInt64
    /// The model's collection.
    public let collection: String
    /// The model's id, as its description reads.
    public let id: String
    /// The model's encoded form after the change; `nil` when it was removed.
    let encoded: Data?

    init(snapshot: UInt64, change: ModelChange) {
        self.snapshot = snapshot
        collection = change.collection
        id = change.id
        encoded = change.encoded
    }

    /// Whether the model was removed.
    public var isRemoval: Bool { encoded == nil }

    /// The model after the change, or `nil` when it was removed.
    ///
    /// - Parameter type: The collection's type.
    /// - Returns: The model.
    /// - Throws: ``RelayError`` with ``RelayError/Code/modelEncoding`` when it does not decode as `type`.
    public func model<M: Model>(as type: M.Type) throws -> M? {
        guard let encoded else { return nil }
        do {
            return try JSONDecoder().decode(M.self, from: encoded)
        } catch {
            throw RelayError(.modelEncoding, "\(collection)/\(id) does not decode as \(M.typeName): \(error)")
        }
    }

    /// `orders/42 upserted in commit 7`.
    public var description: String {
        "\(collection)/\(id) \(isRemoval ? "removed" : "upserted") in commit \(snapshot)"
    }
}
