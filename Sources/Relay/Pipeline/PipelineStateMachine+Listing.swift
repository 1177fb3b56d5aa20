import Foundation

/// Listings and counts of the operations the pipeline knows.
extension PipelineStateMachine {
    /// The operations that `query` selects, oldest first, one page.
    ///
    /// It reads every slot, so it costs the number of known operations (finished ones included, until their
    /// retention ends), under the lock: a tool's query, not a hot path.
    func operations(_ query: OperationQuery, now: Int64) -> OperationPage {
        let after = query.after?.order ?? 0
        var selected: [(order: UInt64, slot: Int32)] = []
        for slot in graph.occupied {
            let entry = graph[slot]
            guard entry.order > after, selects(query, slot) else { continue }
            selected.append((entry.order, slot))
        }
        selected.sort { $0.order < $1.order }
        let page = selected.prefix(query.limit)
        let statuses = page.compactMap { status(ofSlot: $0.slot, now: now) }
        let next = selected.count > query.limit ? page.last.map { OperationPage.Cursor(order: $0.order) } : nil
        return OperationPage(statuses: statuses, next: next)
    }

    /// How many known operations are in each state, of one sequence and one kind when given.
    func counts(sequence: CallSequence.Name?, kind: CallKind?) -> [OperationQuery.State: Int] {
        var counts: [OperationQuery.State: Int] = [:]
        let query = OperationQuery(sequence: sequence, kind: kind)
        for slot in graph.occupied where selects(query, slot) {
            counts[state(of: slot), default: 0] += 1
        }
        return counts
    }

    private func selects(_ query: OperationQuery, _ slot: Int32) -> Bool {
        let operation = graph[slot].record.operation
        if let sequence = query.sequence, operation.sequenceName != sequence { return false }
        if let kind = query.kind, operation.kind != kind { return false }
        return query.states.isEmpty || query.states.contains(state(of: slot))
    }

    private func state(of slot: Int32) -> OperationQuery.State {
        switch graph[slot].phase {
        case .pending, .ready, .free: .pending
        case .running: .running
        case .finished:
            switch graph[slot].result {
            case .completed: .completed
            case .skipped: .skipped
            case .failed: .failed
            case .cancelled, nil: .cancelled
            }
        }
    }
}
