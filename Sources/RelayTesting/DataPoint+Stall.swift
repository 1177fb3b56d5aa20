import Foundation
import Relay

/// A test that waits for something only the clock can bring, and never moves it.
public struct StalledTest: Error, Sendable, CustomStringConvertible {
    /// The operations that cannot move: the one awaited, or those that run and sleep on the clock.
    public let operations: [UUID]
    /// What the operation waits for, the clock's time and its sleepers, and what to do.
    public let message: String

    /// The message.
    public var description: String { message }
}

extension DataPoint {
    /// The outcome of an operation, or, once nothing can move without the test, an error that says so at once.
    ///
    /// Awaiting a handle whose operation waits for a retry or a hold on a ``ManualClock`` that nobody advances waits
    /// for ever, and a test then ends only at its time limit. This waits as ``CallHandle/outcome`` does, but as soon
    /// as the DataPoint is idle or stalled (see ``idle()``) and the operation has not finished, it throws
    /// ``StalledTest`` naming what the operation waits for and the clock's sleepers with their deadlines.
    ///
    /// ```swift
    /// let handle = try await point.enqueue(CallOperation(kind: "flaky"))
    /// try await point.idle()
    /// clock.advance(by: .seconds(10))
    /// #expect(try await point.outcome(of: handle, on: clock) == .completed(Data()))
    /// ```
    ///
    /// - Important: Use it where nothing else in the test moves the clock or enqueues work while it waits: it takes
    ///   an idle DataPoint for a stalled test.
    /// - Parameters:
    ///   - handle: The operation's handle.
    ///   - clock: The DataPoint's clock, whose sleepers the error names.
    /// - Returns: The operation's result.
    /// - Throws: ``StalledTest`` when it cannot finish without the test, and the errors of ``CallHandle/outcome``.
    public nonisolated func outcome(of handle: CallHandle, on clock: ManualClock) async throws -> CallResult {
        try await withThrowingTaskGroup(of: CallResult?.self) { group in
            group.addTask { try await handle.outcome }
            group.addTask {
                // Stalled while the operation runs and sleeps on the clock: the same answer as idle, below.
                _ = await self.waitUntilIdleOrStalled()
                return nil
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let result = next { return result }
                // Idle: the outcome may have come with the same step; otherwise nothing moves it any more.
                let status = try await handle.status
                if case .finished(let result) = status?.state { return result }
                let waiting = status.map { "\($0.state)" } ?? "unknown"
                throw StalledTest(
                    operations: [handle.id],
                    message: "operation \(handle.id) is \(waiting), and nothing can move without the test: the "
                        + "DataPoint is idle, or what runs sleeps on the clock, and the clock stands still (\(clock.sleepersDescription)). Advance the "
                        + "clock, or give the operation what it waits for.")
            }
            return try await handle.outcome
        }
    }
}
