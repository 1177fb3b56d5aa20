import Foundation

/// What the shell tells the DataPoint's observers (see ``CallObserver``); nothing of it runs without one.
extension PipelineCore {
    /// The operations with what every observer keeps with them, read in the enqueuing task.
    ///
    /// The array is copied only once an operation has something to carry: a task outside any trace carries nothing.
    func carrying(_ operations: [CallOperation]) -> [CallOperation] {
        var carried = operations
        for index in operations.indices {
            var carrier: [String: String] = [:]
            for observer in configuration.observers {
                let kept = observer.carrier(for: operations[index])
                if !kept.isEmpty { carrier.merge(kept) { _, later in later } }
            }
            if !carrier.isEmpty { carried[index] = operations[index].carrying(carrier) }
        }
        return carried
    }

    /// Tells the observers that a worker claimed these jobs.
    func observeClaims(_ jobs: some Sequence<PipelineStateMachine.Job>) {
        for job in jobs {
            for observer in configuration.observers {
                observer.claimed(job.record.operation, attempt: job.attempt)
            }
        }
    }

    /// Runs an attempt inside every observer's ``CallObserver/attempt(_:number:_:)``, the first outermost, and tells
    /// them how it ended.
    func observed(
        _ job: PipelineStateMachine.Job, attempt: () async -> PipelineStateMachine.AttemptEnd
    ) async -> PipelineStateMachine.AttemptEnd {
        await observed(job, by: configuration.observers[...], attempt: attempt)
    }

    private func observed(
        _ job: PipelineStateMachine.Job, by observers: ArraySlice<any CallObserver>,
        attempt: () async -> PipelineStateMachine.AttemptEnd
    ) async -> PipelineStateMachine.AttemptEnd {
        let operation = job.record.operation
        guard let outer = observers.first else {
            let end = await attempt()
            let ending = end.observed
            for observer in configuration.observers {
                observer.attemptEnded(operation, number: job.attempt, ending: ending)
            }
            return end
        }
        return await outer.attempt(operation, number: job.attempt) {
            await observed(job, by: observers.dropFirst(), attempt: attempt)
        }
    }
}

extension PipelineStateMachine.AttemptEnd {
    /// How the attempt ended, as observers see it.
    var observed: AttemptEnding {
        switch self {
        case .outcome(let outcome): AttemptEnding(outcome: outcome)
        case .reported(let outcome, let report): AttemptEnding(outcome: outcome, httpStatus: report.httpStatus)
        case .staged(let outcome, let report, _): AttemptEnding(outcome: outcome, httpStatus: report?.httpStatus)
        case .error(let reason): AttemptEnding(outcome: nil, error: reason)
        case .interrupted(let reason): AttemptEnding(outcome: nil, error: reason, interrupted: true)
        case .returned: AttemptEnding(outcome: nil, error: "given back before it began", interrupted: true)
        }
    }
}
