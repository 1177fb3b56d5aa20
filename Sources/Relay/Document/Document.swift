import Foundation

/// The DataPoint's models: each collection's encoded models by id, and which type each collection holds.
///
/// Models are kept encoded, so a model costs its encoded size and a dictionary entry; readers copy what they read out
/// under the lock (collections are copied on write) and decode it after. What reads decode is kept too, bounded (see
/// ``DecodedModels``), so that resolving an alias or a relation again costs a lookup, not a decode. Which type a
/// collection holds is known only in the running process: a reopened store restores the encoded models, and
/// registering the type binds them again.
struct Document: Sendable {
    private var collections: [String: ModelTable] = [:]
    /// The collection each registered type is kept in, and the name of the type of each registered collection.
    private var collectionOfType: [ObjectIdentifier: String] = [:]
    private var typeOfCollection: [String: String] = [:]

    /// The collection of key-values, under a name that registrations may not take.
    static let values = "relay.values"
    /// The collection of relations, stored like models so that they persist, and indexed both ways.
    static let relations = "relay.relations"
    private var index = RelationIndex()
    /// Changes applied but not yet durable, which readers do not see yet.
    private var pending = PendingModels()
    private(set) var decoded = DecodedModels()
    /// Counts the document's changes, so that a relation resolved outside the lock is kept only if nothing changed
    /// meanwhile.
    private(set) var generation: UInt64 = 0
    /// Whether the store makes every commit durable as it is made, as one that keeps no records does: staged changes
    /// then show at once, and there is nothing to hold back from readers or to revert.
    private let durableAtOnce: Bool

    init(durableAtOnce: Bool = false) {
        self.durableAtOnce = durableAtOnce
    }

    /// Takes the models a store restored.
    mutating func restore(_ models: [String: [String: Data]]) {
        collections = models.mapValues(ModelTable.init)
        index = RelationIndex()
        pending = PendingModels()
        decoded = DecodedModels()
        generation += 1
        for id in (models[Self.relations] ?? [:]).keys {
            if let relation = Relation(storedID: id) { index.apply(relation, removing: false) }
        }
    }

    /// Registers `type` as the type of `collection`; registering the same pair again is a conflict too, so that a
    /// second registration never passes unnoticed.
    mutating func register<M: Model>(_ type: M.Type, as collection: String) throws(RelayError) {
        let typeName = M.typeName
        guard !collection.hasPrefix("relay.") else {
            throw RelayError(.collectionConflict, "collection names that start with \"relay.\" are Relay's own")
        }
        if let existing = collectionOfType[ObjectIdentifier(type)] {
            throw RelayError(
                .collectionConflict, "\(typeName) is registered already, as the collection \(existing)")
        }
        if let existing = typeOfCollection[collection] {
            throw RelayError(.collectionConflict, "the collection \(collection) holds \(existing) already")
        }
        collectionOfType[ObjectIdentifier(type)] = collection
        typeOfCollection[collection] = typeName
    }

    /// Whether a type is registered as `collection`.
    func holdsType(_ collection: String) -> Bool {
        typeOfCollection[collection] != nil
    }

    /// The collections of registered types.
    var registrations: [ObjectIdentifier: String] { collectionOfType }

    /// The collection a registered type is kept in.
    func collection<M: Model>(of type: M.Type) throws(RelayError) -> String {
        guard let collection = collectionOfType[ObjectIdentifier(type)] else {
            throw RelayError(.unknownCollection, "\(M.typeName) is not registered; register it with a collection first")
        }
        return collection
    }

    /// A model a read found: encoded, and the copy a read kept if there is one.
    struct Found: Sendable {
        let alias: Alias
        let encoded: Data
        var kept: (any DecodedValue)?
    }

    /// What a read of one model finds under the lock: the copy a read kept, or the encoded form.
    struct Lookup: Sendable {
        let kept: (any DecodedValue)?
        let found: Found?
    }

    /// Looks the model `alias` names up.
    func lookup(_ alias: Alias) -> Lookup {
        if let kept = decoded.model(alias) { return Lookup(kept: kept, found: nil) }
        return Lookup(kept: nil, found: found(alias))
    }

    /// The encoded model that `alias` names, or `nil` when the document does not hold it, as readers see it.
    func found(_ alias: Alias) -> Found? {
        let encoded = pending.shownValue(alias.collection, alias.id) ?? collections[alias.collection]?[alias.id]
        return encoded.map { Found(alias: alias, encoded: $0) }
    }

    /// What a resolution of a relation finds under the lock: the resolution a read kept, or the related models'
    /// encoded forms in id order, their collection, and the generation.
    struct RelatedLookup: Sendable {
        let kept: (any DecodedValue)?
        let found: [Found]
        let collection: String
        let generation: UInt64
    }

    /// A relation's resolution that a read kept.
    func keptRelated(_ key: DecodedModels.RelationKey) -> RelatedLookup? {
        guard pending.isEmpty else { return nil }
        return decoded.related(key).map { RelatedLookup(kept: $0, found: [], collection: "", generation: generation) }
    }

    /// Looks a relation up, from `origin` by `kind` into `collection`.
    func lookupRelated(from origin: Alias, by kind: Relationship, into collection: String) -> RelatedLookup {
        let related = self.related(to: origin, by: kind).filter { $0.collection == collection }
        var models = related.compactMap(found).sorted { $0.alias.id < $1.alias.id }
        for index in models.indices { models[index].kept = decoded.model(models[index].alias) }
        return RelatedLookup(kept: nil, found: models, collection: collection, generation: generation)
    }

    /// Keeps a model a read decoded, if the document still holds what it was decoded from.
    mutating func keepDecoded<M: Sendable>(_ model: M, of alias: Alias, from encoded: Data) {
        guard collections[alias.collection]?[alias.id] == encoded else { return }
        decoded.keep(model, of: alias)
    }

    /// Keeps a relation a read resolved, if the document has not changed since the read's `generation`.
    ///
    /// The models it decoded are kept one by one too, so that resolving the relation again after a change to one of
    /// them decodes that one only.
    mutating func keepRelated<R: Sendable>(
        _ models: [R], for key: DecodedModels.RelationKey, in collection: String, decoded fresh: [(Alias, R)],
        readAt generation: UInt64
    ) {
        guard generation == self.generation, pending.isEmpty else { return }
        decoded.keepRelated(models, for: key, in: collection)
        for (alias, model) in fresh { decoded.keep(model, of: alias) }
    }

    /// Every model, key-value and relation the document holds, as stored: what a shared store's document is
    /// compared with when it is read again whole.
    var storedKeys: [Alias] {
        collections.flatMap { collection, table in table.ids.map { Alias(collection: collection, id: $0) } }
    }

    /// The encoded models of a collection, by id, as readers see them.
    func models(in collection: String) -> [String: Data] {
        var models = collections[collection]?.all ?? [:]
        for (id, value) in pending.shown(in: collection) { models[id] = value }
        return models
    }

    /// How many models a collection holds, as readers see it.
    func count(in collection: String) -> Int {
        guard pending.touches(collection) else { return collections[collection]?.count ?? 0 }
        return models(in: collection).count
    }

    /// The encoded value stored under a key of the key-values, as readers see it.
    func value(forKey key: String) -> Data? {
        pending.shownValue(Self.values, key) ?? collections[Self.values]?[key]
    }

    /// Applies a commit's changes, in order, before they are durable: readers see them once ``publish(through:)``
    /// says so, and ``revert(from:)`` takes them back.
    mutating func stage(_ changes: [ModelChange]) {
        if !durableAtOnce {
            for change in changes { pending.note(change, before: collections[change.collection]?[change.id]) }
        }
        apply(changes)
    }

    /// Whether the commit being applied has staged changes, which ``seal(_:)`` must close.
    var hasStagedChanges: Bool { pending.hasOpenBatch }

    /// Closes the staged changes under their transition's ticket; a durable ticket shows them at once.
    mutating func seal(_ ticket: StorageTicket) {
        if pending.seal(ticket) { generation += 1 }
    }

    /// Shows readers the staged changes whose tickets are durable.
    mutating func publish(through ticket: StorageTicket) {
        if !pending.isEmpty, pending.publish(through: ticket) { generation += 1 }
    }

    /// Takes back the staged changes from `ticket` on, whose write failed, and those staged since.
    mutating func revert(from ticket: StorageTicket) {
        guard !pending.isEmpty || pending.hasOpenBatch else { return }
        apply(pending.revert(from: ticket))
    }

    /// Applies a transaction's changes, in order.
    ///
    /// A transaction's changes come in runs of one collection, so each run takes its collection out once, rather
    /// than looking it up for every change.
    mutating func apply(_ changes: [ModelChange]) {
        var next = changes.startIndex
        while next < changes.endIndex {
            let collection = changes[next].collection
            var models = collections.removeValue(forKey: collection) ?? ModelTable()
            while next < changes.endIndex, changes[next].collection == collection {
                let change = changes[next]
                models.set(change.encoded, for: change.id)
                decoded.drop(change.id, in: collection)
                if collection == Self.relations, let relation = Relation(storedID: change.id) {
                    index.apply(relation, removing: change.encoded == nil)
                    decoded.dropRelations()
                }
                next += 1
            }
            if !models.isEmpty { collections[collection] = models }
        }
        generation += 1
    }

    /// The models related to `model` by `kind`, as readers see them.
    func related(to model: Alias, by kind: Relationship) -> Set<Alias> {
        var related = index.related(to: model, by: kind)
        for (id, value) in pending.shown(in: Self.relations) {
            guard let relation = Relation(storedID: id), let other = relation.other(than: model, by: kind) else {
                continue
            }
            if value == nil { related.remove(other) } else { related.insert(other) }
        }
        return related
    }

    /// Checks a transaction's relations before anything of it applies: each names two models that the document
    /// holds, or that the transaction upserts before the relation and does not remove (S23).
    func checkRelations(in changes: [ModelChange]) throws(RelayError) {
        guard changes.contains(where: { $0.collection == Self.relations }) else { return }
        var touched: [Alias: Bool] = [:]
        for change in changes {
            if change.collection == Self.relations {
                guard change.encoded != nil, let relation = Relation(storedID: change.id) else { continue }
                for model in [relation.from, relation.to] {
                    let exists = touched[model] ?? (collections[model.collection]?.contains(model.id) == true)
                    guard exists else {
                        throw RelayError(
                            .modelNotFound,
                            "the relation \(relation.from) \(relation.kind) \(relation.to) names \(model), which is not "
                                + "stored; upsert it first, or earlier in the same transaction")
                    }
                }
            } else if change.collection != Self.values {
                touched[Alias(collection: change.collection, id: change.id)] = change.encoded != nil
            }
        }
    }

    /// The removals of every relation that names a model these changes removed, once they are applied (S23).
    func relationsOfRemoved(_ changes: [ModelChange]) -> [ModelChange] {
        guard !index.isEmpty else { return [] }
        var relations = Set<Relation>()
        for change in changes
        where change.encoded == nil && change.collection != Self.relations && change.collection != Self.values {
            relations.formUnion(index.relations(naming: Alias(collection: change.collection, id: change.id)))
        }
        return relations.map { $0.change(removing: true) }.sorted { $0.id < $1.id }
    }

    /// The changes that erase `roots` as S23 says: each root, what it owns that no other living owner keeps, through
    /// any depth, and every relation that names an erased model; roots that are not there erase nothing.
    func erasure(of roots: [Alias]) -> [ModelChange] {
        let erased = index.erasure(of: roots) { collections[$0.collection]?.contains($0.id) == true }
        var relations = Set<Relation>()
        for model in erased { relations.formUnion(index.relations(naming: model)) }
        return erased.map { ModelChange(collection: $0.collection, id: $0.id, encoded: nil) }
            + relations.map { $0.change(removing: true) }.sorted { $0.id < $1.id }
    }
}
