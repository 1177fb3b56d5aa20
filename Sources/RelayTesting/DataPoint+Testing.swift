import Relay

extension DataPoint {
    /// Returns once nothing runs and nothing more can start without outside input.
    ///
    /// Operations waiting for a hold, a retry, a dependency or a resume do not count, so a test can advance a manual
    /// clock or resume a sequence next. A hold or a retry whose time the clock has passed does count until the
    /// operation has started: after `clock.advance(by:)`, `idle()` returns once what became due has run. Nor do those of a sequence that is offline: its probe waits for the clock too,
    /// so wait for its `resumed` event, or for a handle, after advancing the clock. A DataPoint that is not running is
    /// idle as soon as nothing runs.
    public nonisolated func idle() async {
        await waitUntilIdle()
    }

    /// Returns once nothing more can start without outside input, while operations may still run.
    ///
    /// Use it to check what a full sequence does not start: after it returns, every operation that could start has
    /// started, and the rest wait for a free slot, a hold, a retry, a dependency, a resume, or an offline sequence's
    /// probe.
    public nonisolated func settled() async {
        await waitUntilSettled()
    }
}
