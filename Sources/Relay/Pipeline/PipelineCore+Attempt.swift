import Foundation

/// One attempt, as a worker runs it: inside the observers' hooks when there are any, with the attempt's context, and
/// what the executor left in the worker's recorder.
extension PipelineCore {
    func execute(
        _ job: PipelineStateMachine.Job,
        link: WorkerLink
    ) async -> PipelineStateMachine.AttemptEnd {
        guard !observing else {
            return await observed(job) { await attempt(job, link: link) }
        }
        return await attempt(job, link: link)
    }

    private func attempt(
        _ job: PipelineStateMachine.Job,
        link: WorkerLink
    ) async -> PipelineStateMachine.AttemptEnd {
        let context = CallContext(
            attempt: job.attempt, startedAt: clock.date(job.startedAt), record: job.record, link: link,
            slot: job.slot)
        do {
            let outcome =
                clock.reportsSleepers
                ? try await ClockSleepObserver.$current.withValue(ClockSleepObserver(core: self, slot: job.slot)) {
                    try await job.record.attempt(on: job.executor, context: context)
                } : try await job.record.attempt(on: job.executor, context: context)
            let report = link.recorder.take(for: context.operationID, attempt: context.attempt)
            let changes = link.recorder.takeChanges(for: context.operationID, attempt: context.attempt)
            if !changes.isEmpty { return .staged(outcome, report, changes) }
            guard let report else { return .outcome(outcome) }
            return .reported(outcome, report)
        } catch {
            _ = link.recorder.take(for: context.operationID, attempt: context.attempt)
            _ = link.recorder.takeChanges(for: context.operationID, attempt: context.attempt)
            let reason = String(describing: error)
            return Task.isCancelled ? .interrupted(reason) : .error(reason)
        }
    }
}
