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
        for shared in changes {
            let change = shared.change
            let model = Alias(collection: change.collection, id: change.id)
            let held = modelVersions[change.collection]?[change.id] ?? 0
            guard held < shared.version || (held == shared.version && taken.contains(model)) else { continue }
            modelVersions[change.collection, default: [:]][change.id] = shared.version
            taken.insert(model)
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

    /// Why an attempt's staged changes cannot go to a shared store, or `nil` when they can: the store commits them
    /// with the attempt's outcome, and a relation that names a model the store no longer holds could not fail the
    /// operation there.
    static func sharedRefusal(ofStaged changes: [ModelChange]) -> RelayError? {
        guard changes.contains(where: { $0.relation != nil && $0.encoded != nil }) else { return nil }
        return RelayError(
            .invalidArgument, "a DataPoint on a shared store commits no relation that an attempt stages, not yet")
    }
}
