/// Puts an attempt's deadline on the pipeline's timer loop, for ``CallContext/withTimeout(_:_:)``.
struct AttemptTimer: Sendable {
    let core: PipelineCore
    let worker: UInt64
    let slot: Int32

    func run<Value>(_ timeout: Duration, _ body: () async throws -> Value) async throws -> Value? {
        let now = core.clock.now
        let (deadline, overflow) = now.addingReportingOverflow(max(timeout, .zero).relayNanoseconds)
        let (core, worker, slot) = (self.core, self.worker, self.slot)
        core.transition { $0.armDeadline(slot, worker: worker, at: overflow ? .max : deadline) }.effects.perform()
        let value: Value
        do {
            value = try await body()
        } catch {
            // Whatever the body threw once its deadline passed, it threw because the deadline cancelled it.
            if core.state.withLock({ $0.disarmDeadline(slot) }) { return nil }
            throw error
        }
        _ = core.state.withLock { $0.disarmDeadline(slot) }
        return value
    }
}
