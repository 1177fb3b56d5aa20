import Foundation

/// The part of a shared store's document that a commit's relations and cascades read (S23), which the store loads
/// while it holds the lock that orders commits, so that every process's commits are checked against the same
/// document.
///
/// ```swift
/// let demand = SharedDocumentSlice.Demand(changes: changes, erasures: erasures)
/// // Under the lock that orders commits, the store loads what `demand` names.
/// let slice = SharedDocumentSlice(existing: heldModels, relations: heldRelations)
/// let committed = try slice.resolve(changes, erasures: erasures)
/// ```
///
/// ``resolve(_:erasures:)`` decides as a DataPoint on a store of its own does: a relation needs both its models, held
/// or upserted earlier in the commit; a removed model takes its relations with it; an erased model takes what it owns
/// that no other living owner keeps, through any depth, and every relation that names what is erased.
public struct SharedDocumentSlice: Sendable {
    /// What a commit's checks and cascades read, for the store to load.
    ///
    /// A commit that relates, removes and erases nothing demands nothing (``isEmpty``).
    public struct Demand: Sendable, Hashable {
        /// The models whose existence the commit's new relations need.
        public let endpoints: Set<Alias>
        /// The models from which ownership is followed down, through any depth.
        ///
        /// They are what the commit erases, and what its new relations make owned. Load whether each model reached
        /// exists, and every relation that names it.
        public let ownershipRoots: Set<Alias>
        /// The models the commit removes: load every relation that names them.
        public let removed: Set<Alias>

        /// What `changes` and `erasures` read.
        public init(changes: [ModelChange], erasures: [Alias]) {
            var endpoints = Set<Alias>()
            var roots = Set(erasures)
            var removed = Set<Alias>()
            for change in changes {
                if let relation = change.relation {
                    guard change.encoded != nil else { continue }
                    endpoints.formUnion([relation.from, relation.to])
                    if relation.kind == .owns { roots.insert(relation.to) }
                } else if change.collection != Document.values, change.encoded == nil {
                    removed.insert(Alias(collection: change.collection, id: change.id))
                }
            }
            self.endpoints = endpoints
            ownershipRoots = erasures.isEmpty ? [] : roots
            self.removed = removed
        }

        /// Whether the commit reads nothing of the document: it upserts models and key-values, and nothing more.
        public var isEmpty: Bool { endpoints.isEmpty && ownershipRoots.isEmpty && removed.isEmpty }
    }

    private var document = Document(durableAtOnce: true)

    /// The slice a store loaded for a ``Demand``.
    ///
    /// - Parameters:
    ///   - existing: Which of the models the demand names, and of those reached from its ownership roots, the store
    ///     holds.
    ///   - relations: Every relation the store holds that names a model reached from the ownership roots or removed.
    public init(existing: some Sequence<Alias>, relations: some Sequence<Relation>) {
        var models: [String: [String: Data]] = [:]
        for model in existing { models[model.collection, default: [:]][model.id] = Data() }
        for relation in relations { models[Document.relations, default: [:]][relation.storedID] = Data() }
        document.restore(models)
    }

    /// The commit's changes as the store must write them: `changes`, then the removals they and `erasures` cascade
    /// to.
    ///
    /// - Throws: ``RelayError`` with ``RelayError/Code/modelNotFound`` for a relation that names a model neither held
    ///   nor upserted before it in the commit; then nothing of the commit may be written.
    public func resolve(_ changes: [ModelChange], erasures: [Alias]) throws(RelayError) -> [ModelChange] {
        try document.checkRelations(in: changes)
        var document = self.document
        document.apply(changes)
        let cascade =
            document.relationsOfRemoved(changes) + (erasures.isEmpty ? [] : document.erasure(of: erasures))
        return changes + cascade
    }
}
