import Foundation

// The fields of a record that a store keeping rows rather than records reads: a shared store turns a record of what
// ran into the row's new state.
extension StorageRecord {
    /// The attempt a `started` or `retryScheduled` record names; `nil` for other kinds.
    public var attempt: Int? {
        switch change {
        case .started(_, let attempt, _), .retryScheduled(_, let attempt, _, _): attempt
        default: nil
        }
    }

    /// When the retry a `retryScheduled` record schedules may start; `nil` for other kinds.
    public var retryDate: Date? {
        guard case .retryScheduled(_, _, let date, _) = change else { return nil }
        return date
    }

    /// Whether the attempt that an `attemptReturned` record gives back had sent its request, which got no answer:
    /// its destination was offline; `nil` for other kinds.
    public var returnedUnanswered: Bool? {
        guard case .attemptReturned(_, _, let sent) = change else { return nil }
        return sent
    }

    /// The terminal state a `finished` record reports; `nil` for other kinds.
    public var result: CallResult? {
        guard case .finished(_, let result, _, _, _) = change else { return nil }
        return result
    }

    /// How long the attempts of the operation a `finished` record ends ran, all together; `nil` for other kinds.
    public var runTime: Duration? {
        guard case .finished(_, _, _, let ran, _) = change else { return nil }
        return .nanoseconds(ran)
    }

    /// The sequence a `sequenceConfigured` record registers or reconfigures, with a suspension count of zero; `nil`
    /// for other kinds.
    public var sequenceConfiguration: StoredSequence? {
        guard case .sequenceConfigured(let name, let bunchSize, let algorithm) = change else { return nil }
        return StoredSequence(name: name, bunchSize: bunchSize, algorithm: algorithm, suspensionCount: 0)
    }
}
