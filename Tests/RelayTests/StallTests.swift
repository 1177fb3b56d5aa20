import Foundation
import Relay
import RelayTesting
import Testing

/// S12 for tests: a test that forgets to move the manual clock fails at once, saying what it waits for.
@Suite("S12 stalled tests", .timeLimit(.minutes(3)))
struct StallTests {
    @Test("S12: awaiting an operation that only the clock can move fails at once, naming the sleepers")
    func stalledAwaitFails() async throws {
        try await DataPoint.testing { point, clock in
            point.register(FlakyExecutor(), for: "flaky")
            let handle = try await point.enqueue(CallOperation(kind: "flaky"))
            // The retry's timer sleeps on the clock once the first attempt has failed; the error names it then.
            try await point.idle()
            await clock.waitForSleepers(1)
            let error = await #expect(throws: StalledTest.self) { _ = try await point.outcome(of: handle, on: clock) }
            #expect(error?.operations == [handle.id])
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
            try await point.idle()
            clock.advance(by: .seconds(10))
            #expect(try await point.outcome(of: handle, on: clock) == .completed(Data()))
        }
    }

    @Test("S12: idle fails at once when every running operation sleeps on the clock, naming them and the sleepers")
    func sleepingExecutorsStallIdle() async throws {
        try await DataPoint.testing { point, clock in
            point.register(
                ClosureExecutor { _, _ in
                    try await clock.sleep(for: .seconds(5))
                    return .completed(Data())
                }, for: "nap")
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 2))
            let first = try await point.enqueue(CallOperation(kind: "nap"))
            let second = try await point.enqueue(CallOperation(kind: "nap"))
            let error = await #expect(throws: StalledTest.self) { try await point.idle() }
            #expect(Set(error?.operations ?? []) == [first.id, second.id])
            #expect(error?.message.contains("executors sleep on the clock") == true, "\(String(describing: error))")
            #expect(error?.message.contains("until +5.0 seconds, +5.0 seconds") == true, "\(String(describing: error))")
            // Moved, the sleepers finish and the same wait returns.
            clock.advance(by: .seconds(5))
            try await point.idle()
            #expect(try await first.outcome == .completed(Data()))
            #expect(try await second.outcome == .completed(Data()))
        }
    }

    @Test("S12: an operation that sleeps beside one still working is no stall, until the other finishes")
    func sleeperBesideWorkIsNoStall() async throws {
        try await DataPoint.testing { point, clock in
            let gate = Gate()
            point.register(
                ClosureExecutor { _, _ in
                    try await clock.sleep(for: .seconds(5))
                    return .completed(Data())
                }, for: "nap")
            point.register(
                ClosureExecutor { _, _ in
                    await gate.wait()
                    return .completed(Data())
                }, for: "work")
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 2))
            let nap = try await point.enqueue(CallOperation(kind: "nap"))
            _ = try await point.enqueue(CallOperation(kind: "work"))
            await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Both run, one asleep and one at the gate: the wait must outlast the gate.
                    do { try await point.idle() } catch {
                        #expect(gate.isOpen, "a stall reported before the gate opened")
                        throw error
                    }
                }
                await clock.waitForSleepers(1)
                await gate.waitForArrivals(1)
                gate.open()
                let error = await #expect(throws: StalledTest.self) { try await group.next() }
                #expect(error?.operations == [nap.id])
            }
            clock.advance(by: .seconds(5))
            try await point.idle()
        }
    }

    @Test("S12: an HTTP call in flight is no stall, though its deadline sleeps on the clock")
    func httpInFlightIsNoStall() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/slow", LoopbackServer.Reply.status(200, "late").delayed(by: .milliseconds(300)))
        try await DataPoint.testing { point, clock in
            let handle = try await point.enqueue(CallOperation.http(HTTPCall(url: server.url("/slow"))))
            await server.waitForRequests(1)
            #expect(clock.sleeperCount >= 1)
            try await point.idle()
            #expect(try await handle.response.status == 200)
        }
    }
}
