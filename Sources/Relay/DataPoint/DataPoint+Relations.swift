import Foundation

/// Relations between the document's models (S23).
extension DataPoint {
    /// The models of type `R` related to `model` by `kind`, in id order: what it owns, what owns it, or what it is
    /// linked to.
    ///
    /// Resolving costs the number of related models, whatever the size of their collections.
    ///
    /// ```swift
    /// let lines = try point.related(to: order, by: .owns, as: OrderLine.self)
    /// ```
    ///
    /// - Parameters:
    ///   - model: The model; its type must be registered.
    ///   - kind: The relation.
    ///   - type: The related models' type; it must be registered.
    /// - Returns: The related models of that type.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` for a type that is not registered, or
    ///   ``RelayError/Code/modelEncoding`` when a related model does not decode.
    public nonisolated func related<M: Model, R: Model>(
        to model: M, by kind: Relationship, as type: R.Type
    ) throws -> [R] {
        let origin = try alias(of: model)
        let encoded = try core.document.withLock { (document) throws(RelayError) -> [String: Data] in
            let collection = try document.collection(ofType: R.typeName)
            let models = document.models(in: collection)
            var related: [String: Data] = [:]
            for alias in document.related(to: origin, by: kind) where alias.collection == collection {
                related[alias.id] = models[alias.id]
            }
            return related
        }
        return try encoded.sorted { $0.key < $1.key }.map { try Self.decodeModel(R.self, from: $0.value, id: $0.key) }
    }

    /// The aliases of every model related to `model` by `kind`, of any type, in order.
    ///
    /// - Parameters:
    ///   - model: The model; its type must be registered.
    ///   - kind: The relation.
    /// - Returns: The aliases.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` for a type that is not registered.
    public nonisolated func relatedAliases<M: Model>(to model: M, by kind: Relationship) throws -> [Alias] {
        let origin = try alias(of: model)
        return core.document.withLock { $0.related(to: origin, by: kind) }.sorted { $0.description < $1.description }
    }
}
