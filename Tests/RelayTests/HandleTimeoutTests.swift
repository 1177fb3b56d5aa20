import Foundation
import RelayTesting
import Testing

@testable import Relay

@Suite("S34 awaiting a handle with a timeout", .timeLimit(.minutes(3)))
struct HandleTimeoutTests {
    @Test("S34: a wait with a timeout ends with deadlineExceeded on the DataPoint's clock; the operation goes on")
    func timeoutEndsTheWaitOnly() async throws {
        let gate = Gate()
        try await withManualPoint { point, clock in
            point.registerGated(gate, result: Data("late".utf8))
            let handle = try await point.enqueue(CallOperation(kind: .gated))
            await gate.waitForArrivals(1)
            let waiter = Task { try await handle.value(timeout: .seconds(5)) }
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(4))
            #expect((try await handle.status)?.state == .running(attempt: 1))
            clock.advance(by: .seconds(1))
            let error = await #expect(throws: RelayError.self) { try await waiter.value }
            #expect(error?.code == .deadlineExceeded)
            #expect(error?.operationIDs == [handle.id])
            #expect(error?.message.contains("running") == true, "it says where the operation stands")
            #expect((try await handle.status)?.state == .running(attempt: 1), "the operation goes on")
            gate.open()
            #expect(try await handle.value(timeout: .seconds(5)) == Data("late".utf8))
            #expect(try await handle.outcome(timeout: .zero) == .completed(Data("late".utf8)), "a finished one at once")
        }
    }

    @Test("S34: a wait with a timeout that the operation beats returns its outcome, failures as value's errors")
    func outcomeBeforeTheTimeout() async throws {
        try await withManualPoint { point, _ in
            point.registerBasics()
            point.register(ClosureExecutor { _, _ in .failed(reason: "nope") }, for: "fails")
            let failing = try await point.enqueue(CallOperation(kind: "fails"))
            let error = await #expect(throws: RelayError.self) { try await failing.value(timeout: .seconds(60)) }
            #expect(error?.code == .operationFailed)
            let echo = try await point.enqueue(CallOperation(kind: .echo, payload: Data("e".utf8)))
            #expect(try await echo.value(timeout: .seconds(60)) == Data("e".utf8))
        }
    }
}
