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
        let id = model.documentKey
        let key = DecodedModels.RelationKey(
            originType: ObjectIdentifier(M.self), originID: id, kind: kind, relatedType: ObjectIdentifier(R.self))
        // One pass under the lock: the relation as a read resolved it before, or the related models' encoded forms.
        // Nothing here is generic over `R` until the cast: unspecialized code looks generic types' metadata up.
        let lookup = try core.readDocument { (document) throws(RelayError) -> Document.RelatedLookup in
            if let kept = document.keptRelated(key) { return kept }
            let origin = Alias(collection: try document.collection(of: M.self), id: id)
            return document.lookupRelated(from: origin, by: kind, into: try document.collection(of: R.self))
        }
        if let kept = lookup.kept as? DecodedArray<R> { return kept.values }
        var related: [R] = []
        var fresh: [(Alias, R)] = []
        related.reserveCapacity(lookup.found.count)
        for entry in lookup.found {
            if let kept = entry.kept as? Decoded<R> {
                related.append(kept.value)
            } else {
                let model = try Self.decodeModel(R.self, from: entry.encoded, id: entry.alias.id)
                related.append(model)
                fresh.append((entry.alias, model))
            }
        }
        core.changeDocument {
            $0.keepRelated(related, for: key, in: lookup.collection, decoded: fresh, readAt: lookup.generation)
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
        return core.readDocument { $0.related(to: origin, by: kind) }.sorted { $0.description < $1.description }
    }
}
