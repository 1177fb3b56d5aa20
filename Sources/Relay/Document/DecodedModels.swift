/// Models that reads decoded, kept so that reading one again, resolving an alias to it, or resolving a relation
/// costs a lookup, not a decode.
///
/// Bounded whatever the document's size, at ``limit`` models, the oldest dropped first, and ``limit`` relations; a
/// change to a model drops its copy and, when relations resolved into its collection are kept, every kept relation,
/// as does a change to any relation. Each copy sits in a typed box, so a read gets its model back with a class cast
/// instead of a cast out of an existential (which copies the model into a box of its own); a relation is kept as
/// the array its resolution returned, in id order, so resolving it again costs one lookup whatever its size.
struct DecodedModels: Sendable {
    /// A relation as a read resolves it: from a model of one registered type, by a kind, into another registered
    /// type.
    ///
    /// Types rather than collection names, so that a kept relation is found before any name is looked up.
    struct RelationKey: Hashable, Sendable {
        let originType: ObjectIdentifier
        let originID: String
        let kind: Relationship
        let relatedType: ObjectIdentifier
    }

    static let limit = 16_384

    private var models: [Alias: any DecodedValue] = [:]
    private var relations: [RelationKey: any DecodedValue] = [:]
    /// The collections that kept relations resolve into: a change to one of them drops every kept relation, which
    /// keeps a resolution to one lookup of one key.
    private var relatedCollections: Set<String> = []

    /// The kept copy of a model, boxed as a ``Decoded``; the reader casts it to its type, outside the lock.
    ///
    /// Nothing here is generic, as unspecialized generic code looks its types' metadata up on every call.
    func model(_ alias: Alias) -> (any DecodedValue)? {
        models.isEmpty ? nil : models[alias]
    }

    mutating func keep<M: Sendable>(_ model: M, of alias: Alias) {
        if models.count >= Self.limit, models[alias] == nil { models.remove(at: models.startIndex) }
        models[alias] = Decoded(model)
    }

    /// The kept resolution of a relation, boxed as a ``DecodedArray``; the reader casts it, outside the lock.
    func related(_ key: RelationKey) -> (any DecodedValue)? {
        relations.isEmpty ? nil : relations[key]
    }

    /// Keeps a relation's resolution into `collection`.
    mutating func keepRelated<R: Sendable>(_ models: [R], for key: RelationKey, in collection: String) {
        if relations.count >= Self.limit { dropRelations() }
        relations[key] = DecodedArray(models)
        relatedCollections.insert(collection)
    }

    /// Drops what a change to the model `id` of `collection` makes stale.
    mutating func drop(_ id: String, in collection: String) {
        if !models.isEmpty { models[Alias(collection: collection, id: id)] = nil }
        if !relations.isEmpty, relatedCollections.contains(collection) { dropRelations() }
    }

    /// Drops every resolved relation, as a change to any relation may change any of them.
    mutating func dropRelations() {
        guard !relations.isEmpty else { return }
        relations.removeAll()
        relatedCollections.removeAll()
    }
}

/// A decoded value, boxed; the protocol erases its type.
protocol DecodedValue: AnyObject, Sendable {}

final class Decoded<Value: Sendable>: DecodedValue {
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}

/// Decoded values in order, boxed; its own type rather than a ``Decoded`` array, so that a cast to it looks up one
/// type's metadata, not two.
final class DecodedArray<Element: Sendable>: DecodedValue {
    let values: [Element]

    init(_ values: [Element]) {
        self.values = values
    }
}
