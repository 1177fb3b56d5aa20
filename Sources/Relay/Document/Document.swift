import Foundation

/// The DataPoint's models: each collection's encoded models by id, and which type each collection holds.
///
/// Models are kept encoded, so a model costs its encoded size and a dictionary entry; readers copy what they read out
/// under the lock (collections are copied on write) and decode it after. The last models read one by one are kept
/// decoded too, up to ``decodedLimit``, so that resolving an alias or a relation costs a lookup, not a decode; any
/// change to a model drops its decoded copy. Which type a collection holds is known only in the running process: a
/// reopened store restores the encoded models, and registering the type binds them again.
struct Document: Sendable {
    private var collections: [String: [String: Data]] = [:]
    /// The collection each registered type is kept in, and the name of the type of each registered collection.
    private var collectionOfType: [ObjectIdentifier: String] = [:]
    private var typeOfCollection: [String: String] = [:]

    /// The collection of key-values, under a name that registrations may not take.
    static let values = "relay.values"
    /// The collection of relations, stored like models so that they persist, and indexed both ways.
    static let relations = "relay.relations"
    private var index = RelationIndex()
    /// Models decoded by reads, by collection and id; bounded, whatever the document's size.
    private var decoded: [Alias: any Sendable] = [:]
    static let decodedLimit = 16_384

    /// Takes the models a store restored.
    mutating func restore(_ models: [String: [String: Data]]) {
        collections = models
        index = RelationIndex()
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

    /// A model a read found: its decoded copy if a read kept one, else its encoded form.
    struct Found: Sendable {
        let alias: Alias
        let decoded: (any Sendable)?
        let encoded: Data?
    }

    /// The models that `aliases` name and the document holds, each decoded if a read kept it.
    func found(_ aliases: some Sequence<Alias>) -> [Found] {
        aliases.compactMap(found)
    }

    /// The model that `alias` names, decoded if a read kept it, or `nil` when the document does not hold it.
    func found(_ alias: Alias) -> Found? {
        if let decoded = decodedModel(alias) { return Found(alias: alias, decoded: decoded, encoded: nil) }
        return collections[alias.collection]?[alias.id].map { Found(alias: alias, decoded: nil, encoded: $0) }
    }

    /// The decoded copy of a model, if a read kept one.
    func decodedModel(_ alias: Alias) -> (any Sendable)? {
        decoded.isEmpty ? nil : decoded[alias]
    }

    /// Keeps a model a read decoded, if the document still holds what it decoded it from.
    mutating func keepDecoded(_ model: any Sendable, of alias: Alias, from encoded: Data) {
        guard collections[alias.collection]?[alias.id] == encoded else { return }
        if decoded.count >= Self.decodedLimit { decoded.remove(at: decoded.startIndex) }
        decoded[alias] = model
    }

    /// The encoded models of a collection, by id.
    func models(in collection: String) -> [String: Data] {
        collections[collection] ?? [:]
    }

    /// Applies a transaction's changes, in order.
    ///
    /// A transaction's changes come in runs of one collection, so each run takes its collection out once, rather
    /// than looking it up for every change.
    mutating func apply(_ changes: [ModelChange]) {
        var next = changes.startIndex
        while next < changes.endIndex {
            let collection = changes[next].collection
            var models = collections.removeValue(forKey: collection) ?? [:]
            while next < changes.endIndex, changes[next].collection == collection {
                let change = changes[next]
                models[change.id] = change.encoded
                if !decoded.isEmpty { decoded[Alias(collection: collection, id: change.id)] = nil }
                if collection == Self.relations, let relation = Relation(storedID: change.id) {
                    index.apply(relation, removing: change.encoded == nil)
                }
                next += 1
            }
            if !models.isEmpty { collections[collection] = models }
        }
    }

    /// The models related to `model` by `kind`.
    func related(to model: Alias, by kind: Relationship) -> Set<Alias> {
        index.related(to: model, by: kind)
    }

    /// The changes that erase `roots` as S23 says: each root, what it owns that no other living owner keeps, through
    /// any depth, and every relation that names an erased model; roots that are not there erase nothing.
    func erasure(of roots: [Alias]) -> [ModelChange] {
        let erased = index.erasure(of: roots) { collections[$0.collection]?[$0.id] != nil }
        var relations = Set<Relation>()
        for model in erased { relations.formUnion(index.relations(naming: model)) }
        return erased.map { ModelChange(collection: $0.collection, id: $0.id, encoded: nil) }
            + relations.map { $0.change(removing: true) }.sorted { $0.id < $1.id }
    }
}
