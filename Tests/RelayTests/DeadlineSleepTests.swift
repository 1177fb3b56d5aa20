import Foundation
import Testing

@testable import Relay

/// The sleeps of Relay's deadlines on the system clock (see `DeadlineTimer`): an HTTP attempt's timeout, `execute`'s
/// deadline and a handle's `value(timeout:)` race work that mostly ends first, so a cancelled sleep must end, and let
/// go of its timer, at once rather than at its deadline.
@Suite("S34 deadline sleeps", .timeLimit(.minutes(3)))
struct DeadlineSleepTests {
    @Test("S34: a deadline an hour away, cancelled, ends at once with CancellationError")
    func cancelledSleepEndsAtOnce() async throws {
        for _ in 0..<1000 {
            let sleeper = Task { try await DeadlineTimer.shared.sleep(nanoseconds: 3_600_000_000_000) }
            sleeper.cancel()
            await #expect(throws: CancellationError.self) { try await sleeper.value }
        }
    }

    @Test("S34: a sleep in a task cancelled before it starts throws at once; an uncancelled one lasts its time")
    func sleepLastsItsTime() async throws {
        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await DeadlineTimer.shared.sleep(nanoseconds: 3_600_000_000_000)
        }
        await #expect(throws: CancellationError.self) { try await cancelledFirst.value }
        let started = ContinuousClock.now
        try await DeadlineTimer.shared.sleep(nanoseconds: 20_000_000)
        #expect(ContinuousClock.now - started >= .milliseconds(20))
    }

    @Test("S34: a sleep earlier than every sleeping one ends on its own time, past a thousand cancelled ones")
    func earlierSleepEndsOnItsTime() async throws {
        let long = Task { try await DeadlineTimer.shared.sleep(nanoseconds: 3_600_000_000_000) }
        // A thousand: five thousand took over a minute under ThreadSanitizer beside the rest of the suite.
        for _ in 0..<1000 {
            let cancelled = Task { try await DeadlineTimer.shared.sleep(nanoseconds: 3_000_000_000_000) }
            cancelled.cancel()
            await #expect(throws: CancellationError.self) { try await cancelled.value }
        }
        let started = ContinuousClock.now
        try await DeadlineTimer.shared.sleep(nanoseconds: 20_000_000)
        #expect(ContinuousClock.now - started >= .milliseconds(20))
        long.cancel()
        await #expect(throws: CancellationError.self) { try await long.value }
    }

    @Test("S34: value(timeout:) on the system clock returns the outcome that beats its deadline, again and again")
    func handleDeadlineBeatenByOutcome() async throws {
        try await DataPoint.with(storage: .volatile) { point in
            point.register(ClosureExecutor { _, _ in .completed(Data("done".utf8)) }, for: "quick")
            for _ in 0..<200 {
                let handle = try await point.enqueue(CallOperation(kind: "quick"))
                #expect(try await handle.value(timeout: .seconds(3600)) == Data("done".utf8))
            }
        }
    }
}
