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
            if !changes.isEmpty {
                guard let shared, PipelineStateMachine.storeDecides(changes) else {
                    return .staged(outcome, report, changes)
                }
                return await commitStaged(outcome, report: report, changes: changes, of: job, in: shared)
            }
            guard let report else { return .outcome(outcome) }
            return .reported(outcome, report)
        } catch {
            _ = link.recorder.take(for: context.operationID, attempt: context.attempt)
            _ = link.recorder.takeChanges(for: context.operationID, attempt: context.attempt)
            let reason = String(describing: error)
            return Task.isCancelled ? .interrupted(reason) : .error(reason)
        }
    }

    /// The end of an attempt whose staged relations a shared store decides, before the end is recorded (see
    /// ``SharedStorage/commitStaged(_:result:changes:ran:)``): as the executor returned it once the store committed
    /// it, a failure when the store refused its relations, or a retry when the store could not tell.
    private func commitStaged(
        _ outcome: CallOutcome, report: AttemptReport?, changes: [ModelChange], of job: PipelineStateMachine.Job,
        in store: any SharedStorage
    ) async -> PipelineStateMachine.AttemptEnd {
        let result: CallResult
        switch outcome {
        case .completed(let data): result = .completed(data)
        case .skipped: result = .skipped
        // Nothing is committed: the changes of an attempt that did not succeed are left out.
        case .failed, .retry, .offline: return .staged(outcome, report, changes)
        }
        do {
            let ran = Duration.nanoseconds(clock.now - job.startedAt)
            let id = job.record.operation.id
            if let refusal = try await store.commitStaged(id, result: result, changes: changes, ran: ran) {
                return .staged(
                    .failed(reason: "its staged changes cannot be committed: \(refusal.message)"), report, [])
            }
            return .staged(outcome, report, changes)
        } catch {
            let reason = "its staged changes could not be committed: \(error)"
            return Task.isCancelled ? .interrupted(reason) : .staged(.retry(reason: reason), report, [])
        }
    }
}
