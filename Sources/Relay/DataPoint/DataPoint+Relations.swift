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
        // One pass under the lock: decoded copies where reads kept them, encoded forms for the rest. Nothing here is
        // generic over `R` until the casts: generic tuples and arrays cost a metadata lookup each in unspecialized code.
        let found = try core.document.withLock { (document) throws(RelayError) -> [Document.Found] in
            let collection = try document.collection(of: R.self)
            return document.found(document.related(to: origin, by: kind).filter { $0.collection == collection })
        }
        var related: [R] = []
        related.reserveCapacity(found.count)
        for entry in found.sorted(by: { $0.alias.id < $1.alias.id }) {
            if let decoded = entry.decoded as? R {
                related.append(decoded)
            } else if let encoded = entry.encoded {
                let model = try Self.decodeModel(R.self, from: encoded, id: entry.alias.id)
                core.document.withLock { $0.keepDecoded(model, of: entry.alias, from: encoded) }
                related.append(model)
            }
        }
        return related
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
