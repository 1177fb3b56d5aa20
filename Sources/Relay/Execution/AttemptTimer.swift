/// Puts an attempt's deadline on the pipeline's timer loop, for ``CallContext/withTimeout(_:_:)``.
struct AttemptTimer: Sendable {
    let link: WorkerLink
    let slot: Int32

    private var core: PipelineCore { link.core }

    func run<Value>(_ timeout: Duration, _ body: () async throws -> Value) async throws -> Value? {
        let now = core.clock.now
        let (deadline, overflow) = now.addingReportingOverflow(max(timeout, .zero).relayNanoseconds)
        let (worker, slot) = (link.worker, self.slot)
        let armed = core.transition { $0.armDeadline(slot, worker: worker, at: overflow ? .max : deadline) }
        core.perform(armed)
        let value: Value
        do {
            value = try await body()
        } catch {
            // Whatever the body threw once its deadline passed, it threw because the deadline cancelled it.
            if disarm(restoring: armed.value) { return nil }
            throw error
        }
        _ = disarm(restoring: armed.value)
        return value
    }

    /// Whether the deadline passed.
    private func disarm(restoring outer: Timers.AttemptDeadline?) -> Bool {
        let slot = self.slot
        let disarmed = core.transition { $0.disarmDeadline(slot, restoring: outer) }
        core.perform(disarmed)
        return disarmed.value
    }
}
