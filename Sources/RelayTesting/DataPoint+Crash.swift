import Foundation
import Relay

extension DataPoint {
    /// Simulates a crash of the process that runs this DataPoint, for tests of recovery.
    ///
    /// The store keeps what it acknowledged and loses what it did not, as after `SIGKILL`. Running operations are
    /// cancelled at once and nothing more is recorded, not even their interruption. The store's folder is released,
    /// so that a new DataPoint can open it, as a restarted process would.
    public nonisolated func simulateCrash() async {
        await crash()
    }

    /// Runs `body` on a running DataPoint over a file store in `folder`, simulates a crash when it returns, and opens
    /// the folder again.
    ///
    /// ```swift
    /// let prepare: (DataPoint) -> Void = { $0.register(executor, for: "send") }
    /// let reopened = try await DataPoint.crashAndReopen(at: folder, prepare: prepare) { point in
    ///     try await point.enqueue(CallOperation(kind: "send"))
    /// }
    /// #expect(reopened.recoveryReport?.operationsRecovered == 1)
    /// ```
    ///
    /// - Parameters:
    ///   - folder: The store's folder.
    ///   - options: The store's options, for both opens.
    ///   - clock: The clock of both DataPoints.
    ///   - configuration: The configuration of both DataPoints.
    ///   - prepare: Registers executors and sequences; runs on both DataPoints before they run.
    ///   - body: The work to crash in the middle of.
    /// - Returns: The reopened DataPoint, prepared and not yet running.
    /// - Throws: What `body` throws (after the crash), or ``RelayError`` when the store cannot be opened.
    public static func crashAndReopen(
        at folder: URL,
        options: FileStorage.Options = FileStorage.Options(),
        clock: some Clock<Duration> = ContinuousClock(),
        configuration: Configuration = Configuration(),
        prepare: (DataPoint) async throws -> Void = { _ in },
        _ body: (DataPoint) async throws -> Void
    ) async throws -> DataPoint {
        let point = try await DataPoint(
            storage: .file(at: folder, options: options), clock: clock, configuration: configuration)
        try await prepare(point)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await point.run() }
            do {
                try await body(point)
            } catch {
                await point.simulateCrash()
                throw error
            }
            await point.simulateCrash()
            try await group.waitForAll()
        }
        let reopened = try await DataPoint(
            storage: .file(at: folder, options: options),
            clock: clock,
            configuration: configuration
        )
        try await prepare(reopened)
        return reopened
    }
}
