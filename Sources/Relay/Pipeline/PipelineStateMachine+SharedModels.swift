import Foundation

/// The document on a shared store: every process holds all of it, and applies each change committed to the store,
/// its own as its commits return and other processes' as the store follows them.
extension PipelineStateMachine {
    /// Applies changes committed to the shared store, those later than what the document holds of their models, and
    /// publishes them to change streams; readers see them at once, since the store has made them durable.
    ///
    /// A commit may change a model more than once: each of its changes applies, in order, when the first does.
    mutating func applySharedModels(_ changes: [SharedModelChange], now: Int64, into actions: inout PipelineActions) {
        var applied: [SharedModelChange] = []
        var taken: Set<Alias> = []
        for shared in changes where modelVersions.admit(shared, taken: &taken) {
            applied.append(shared)
        }
        guard !applied.isEmpty else { return }
        document.apply(applied.map(\.change))
        var start = applied.startIndex
        while start < applied.endIndex {
            let version = applied[start].version
            let end = applied[start...].firstIndex { $0.version != version } ?? applied.endIndex
            publishModelChanges(applied[start..<end].map(\.change), snapshot: version, now: now, into: &actions)
            start = end
        }
    }

    /// Takes a shared store's whole document, read again through `version` because this process fell behind what
    /// the store keeps of removals: each row applies as a change does, and what the document holds that the store
    /// no longer has, from before `version`, was removed meanwhile.
    mutating func reloadSharedModels(
        _ rows: [SharedModelChange], through version: UInt64, now: Int64, into actions: inout PipelineActions
    ) {
        let stored = Set(rows.map { Alias(collection: $0.change.collection, id: $0.change.id) })
        let removed = document.storedKeys.filter { key in
            !stored.contains(key) && modelVersions.version(of: key) < version
        }
        let removals = removed.map {
            SharedModelChange(ModelChange(collection: $0.collection, id: $0.id, encoded: nil), version: version)
        }
        followSharedModels(
            (rows + removals).sorted { $0.version < $1.version }, through: version, now: now, into: &actions)
    }

    /// Applies the changes of a commit of this process's as it returns, but for a commit that the follower has read
    /// already (see ``SharedModelVersions``).
    mutating func applySharedCommit(
        _ changes: [SharedModelChange], now: Int64, into actions: inout PipelineActions
    ) {
        let followed = modelVersions.followed
        applySharedModels(changes.filter { $0.version > followed }, now: now, into: &actions)
    }

    /// Applies changes the store's follower read, and notes that it has applied every change through `version`.
    mutating func followSharedModels(
        _ changes: [SharedModelChange], through version: UInt64, now: Int64, into actions: inout PipelineActions
    ) {
        applySharedModels(changes, now: now, into: &actions)
        modelVersions.follow(through: version) { document.found($0) != nil }
    }

    /// Whether a shared store decides an attempt's staged changes before its end is recorded: they add a relation,
    /// which the store checks against the document it holds rather than this process's copy, which may lag it (see
    /// ``SharedStorage/commitStaged(_:result:changes:ran:)``).
    static func storeDecides(_ changes: [ModelChange]) -> Bool {
        changes.contains { $0.relation != nil && $0.encoded != nil }
    }
}
