/// Puts an attempt's deadline on the pipeline's timer loop, for ``CallContext/withTimeout(_:_:)``.
struct AttemptTimer: Sendable {
    let link: WorkerLink
    let slot: Int32

    private var core: PipelineCore { link.core }

    func run<Value>(_ timeout: Duration, _ body: () async throws -> Value) async throws -> Value? {
        let now = core.clock.now
        let (deadline, overflow) = now.addingReportingOverflow(max(timeout, .zero).relayNanoseconds)
        let (worker, slot) = (link.worker, self.slot)
        let armed = core.apply { $0.armDeadline(slot, worker: worker, at: overflow ? .max : deadline, into: &$1) }
        let value: Value
        do {
            value = try await body()
        } catch {
            // Whatever the body threw once its deadline passed, it threw because the deadline cancelled it.
            if disarm(restoring: armed) { return nil }
            throw error
        }
        _ = disarm(restoring: armed)
        return value
    }

    /// Whether the deadline passed.
    private func disarm(restoring outer: Timers.AttemptDeadline?) -> Bool {
        let slot = self.slot
        let disarmed = core.apply { $0.disarmDeadline(slot, restoring: outer, into: &$1) }
        return disarmed
    }
}
