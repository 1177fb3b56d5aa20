import Foundation
import Relay
import RelayTesting
import Testing

/// S12 for tests: a test that forgets to move the manual clock fails at once, saying what it waits for.
@Suite("S12 stalled tests", .timeLimit(.minutes(1)))
struct StallTests {
    @Test("S12: awaiting an operation that only the clock can move fails at once, naming the sleepers")
    func stalledAwaitFails() async throws {
        try await DataPoint.testing { point, clock in
            point.register(FlakyExecutor(), for: "flaky")
            let handle = try await point.enqueue(CallOperation(kind: "flaky"))
            // The retry's timer sleeps on the clock once the first attempt has failed; the error names it then.
            await point.idle()
            await clock.waitForSleepers(1)
            let error = await #expect(throws: StalledTest.self) { _ = try await point.outcome(of: handle, on: clock) }
            #expect(error?.operation == handle.id)
            #expect(error?.message.contains("pending (retry at") == true, "\(String(describing: error))")
            #expect(error?.message.contains("now +0.0 seconds; ") == true, "\(String(describing: error))")
            #expect(error?.message.contains("until +10.0 seconds") == true, "\(String(describing: error))")
        }
    }

    @Test("S12: once the clock is moved, the same wait returns the outcome")
    func movedClockCompletes() async throws {
        try await DataPoint.testing { point, clock in
            point.register(FlakyExecutor(), for: "flaky")
            let handle = try await point.enqueue(CallOperation(kind: "flaky"))
            await point.idle()
            clock.advance(by: .seconds(10))
            #expect(try await point.outcome(of: handle, on: clock) == .completed(Data()))
        }
    }
}
