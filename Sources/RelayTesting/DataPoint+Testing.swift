import Relay

extension DataPoint {
    /// Returns once nothing can progress without outside input: no operation runs and none is ready to start.
    ///
    /// Operations waiting for a hold, a retry, a dependency, or a resume do not count, so a test can advance a manual
    /// clock or resume a sequence next. A DataPoint that is not running is idle as soon as nothing runs.
    public func idle() async {
        await waitUntilIdle()
    }
}
