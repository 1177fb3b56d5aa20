import Relay

extension DataPoint {
    /// Returns once nothing runs and nothing more can start without outside input; fails at once when only the test
    /// could move what runs.
    ///
    /// Operations waiting for a hold, a retry, a dependency or a resume do not count, so a test can advance a manual
    /// clock or resume a sequence next. A hold or a retry whose time the clock has passed does count until the
    /// operation has started: after `clock.advance(by:)`, `idle()` returns once what became due has run. Operations
    /// that wait for an offline destination do not count either, as its probe waits for the clock too; once the clock
    /// passes the probe's time, `idle()` waits for the probe and for what its answer lets start. A DataPoint that is
    /// not running is idle as soon as nothing runs. The wait ends as soon as the waiting task is cancelled.
    ///
    /// On a ``ManualClock``, an operation whose executor sleeps on the clock runs until the test advances it. When
    /// every running operation does, and nothing more can start, this throws ``StalledTest`` at once, naming them and
    /// the clock's sleepers, rather than wait for the test's time limit. A sleep that races other work, such as an HTTP
    /// attempt's deadline or ``execute(_:deadline:)``'s, does not count: that attempt waits for its response.
    ///
    /// - Important: Use it where nothing else in the test moves the clock while it waits.
    /// - Throws: ``StalledTest`` when only the clock can move the operations that run.
    public nonisolated func idle() async throws {
        let stalled = await waitUntilIdleOrStalled()
        guard !stalled.isEmpty else { return }
        let listed = stalled.map(\.uuidString).joined(separator: ", ")
        let subject =
            stalled.count == 1
            ? "operation \(listed) runs and its executor sleeps" : "operations \(listed) run and their executors sleep"
        let sleepers = clockSleepersDescription ?? "the clock reports no sleepers"
        throw StalledTest(
            operations: stalled,
            message: "\(subject) on the clock, and nothing can move without the test (\(sleepers)). Advance the clock.")
    }

    /// Returns once nothing more can start without outside input, while operations may still run.
    ///
    /// Use it to check what a full sequence does not start: after it returns, every operation that could start has
    /// started, and the rest wait for a free slot, a hold, a retry, a dependency, a resume, or an offline destination's
    /// probe. It never waits for the clock: what only the clock can start already counts as settled, and what runs,
    /// sleeping on the clock or not, does not hold it back.
    public nonisolated func settled() async {
        await waitUntilSettled()
    }
}

extension DataPoint.Configuration {
    /// The configuration of ``DataPoint/testing(storage:configuration:executors:isolation:_:)``: a graceful shutdown
    /// cancels running operations at once, since a grace period on a manual clock lasts until the test moves it.
    public static var testing: DataPoint.Configuration { DataPoint.Configuration(shutdownGracePeriod: .zero) }
}

extension DataPoint {
    /// Opens a DataPoint set up for a test, runs it while `body` runs, then shuts it down: volatile storage, no
    /// shutdown grace period, and a new ``ManualClock`` that only the test moves.
    ///
    /// ```swift
    /// @Test func retriesAfterTheDelay() async throws {
    ///     try await DataPoint.testing { point, clock in
    ///         point.register(flaky, for: "flaky")
    ///         let handle = try await point.enqueue(CallOperation(kind: "flaky"))
    ///         try await point.idle()
    ///         clock.advance(by: .seconds(10))
    ///         _ = try await handle.value
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - storage: Where transitions are recorded; in memory by default.
    ///   - configuration: Limits and policies; ``DataPoint/Configuration/testing`` by default.
    ///   - executors: Executors by kind, in place before the DataPoint starts.
    ///   - isolation: The caller's isolation, where `body` runs; inferred.
    ///   - body: The test, given the running DataPoint and its clock.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or ``RelayError`` when the store cannot be opened.
    public static func testing<Result>(
        storage: some Storage = VolatileStorage(),
        configuration: Configuration = .testing,
        executors: [CallKind: any CallExecutor] = [:],
        isolation: isolated (any Actor)? = #isolation,
        _ body: (DataPoint, ManualClock) async throws -> Result
    ) async throws -> Result {
        let clock = ManualClock()
        return try await with(
            storage: storage, clock: clock, configuration: configuration, executors: executors, isolation: isolation
        ) { point in
            try await body(point, clock)
        }
    }
}
