import Foundation
import Relay
import RelayTesting
import Testing

@Suite("Attempt timeouts on the DataPoint's clock", .timeLimit(.minutes(3)))
struct AttemptTimeoutTests {
    @Test("A deadline from withTimeout passes on the DataPoint's clock: the work is cancelled, the executor decides")
    func deadlinePasses() async throws {
        try await withManualPoint { point, clock in
            let arrived = Gate()
            arrived.open()
            point.register(
                ClosureExecutor { _, context in
                    await arrived.wait()
                    let answer = try await context.withTimeout(.seconds(2)) {
                        try await untilCancelled()
                        return "never"
                    }
                    return answer == nil ? .failed(reason: "no answer within 2 seconds") : .completed(Data())
                }, for: "slow")
            let handle = try await point.enqueue(CallOperation(kind: "slow", retryPolicy: .never))
            await arrived.waitForArrivals(1)
            // The timer loop sleeps until the deadline once the attempt has armed it.
            await clock.waitForSleepers(1)
            clock.advance(by: .milliseconds(1999))
            #expect((try await handle.status)?.state == .running(attempt: 1))
            clock.advance(by: .milliseconds(1))
            let failure = CallFailure(reason: "no answer within 2 seconds", attempts: 1)
            #expect(try await handle.outcome == .failed(failure))
            // The worker that ran it is replaced, and the sequence carries on.
            let next = try await point.enqueue(CallOperation(kind: .echo, payload: Data("next".utf8)))
            #expect(try await next.value == Data("next".utf8))
        }
    }

    @Test("Work that ends before its deadline returns its value, and the deadline passing later cancels nothing")
    func workEndsFirst() async throws {
        try await withManualPoint { point, clock in
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 1))
            point.register(
                ClosureExecutor { _, context in
                    let answer = try await context.withTimeout(.seconds(1)) { Data("fast".utf8) }
                    return .completed(answer ?? Data())
                }, for: "fast")
            let arrived = Gate()
            arrived.open()
            let finish = Gate()
            point.register(
                ClosureExecutor { _, context in
                    let answer = try await context.withTimeout(.seconds(10)) {
                        await arrived.wait()
                        await finish.wait()
                        try Task.checkCancellation()
                        return Data("slow".utf8)
                    }
                    return answer.map { .completed($0) } ?? .failed(reason: "timed out")
                }, for: "slow")
            #expect(try await point.enqueue(CallOperation(kind: "fast")).value == Data("fast".utf8))
            // At bunch 1, the worker that ran the fast attempt runs this one while the fast deadline passes.
            let slow = try await point.enqueue(CallOperation(kind: "slow", retryPolicy: .never))
            await arrived.waitForArrivals(1)
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(5))
            // The timer loop has handled the first deadline once it sleeps again, until the second.
            await clock.waitForSleepers(1)
            finish.open()
            #expect(try await slow.value == Data("slow".utf8))
        }
    }

    @Test("Deadlines nest: an inner one ends at the outer's deadline when that comes first")
    func deadlinesNest() async throws {
        try await withManualPoint { point, clock in
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 2))
            let arrived = Gate()
            arrived.open()
            point.register(
                ClosureExecutor { operation, context in
                    let shortOuter = operation.payload == Data("short outer".utf8)
                    let (outer, inner): (Duration, Duration) =
                        shortOuter ? (.seconds(1), .seconds(10)) : (.seconds(10), .seconds(1))
                    let answer = try await context.withTimeout(outer) {
                        let nested: Void? = try await context.withTimeout(inner) {
                            await arrived.wait()
                            try await untilCancelled()
                        }
                        return nested == nil ? "inner cut short" : "inner ended"
                    }
                    return .completed(Data((answer ?? "outer cut short").utf8))
                }, for: "nested")
            let shortInner = try await point.enqueue(CallOperation(kind: "nested", payload: Data("short inner".utf8)))
            let shortOuter = try await point.enqueue(CallOperation(kind: "nested", payload: Data("short outer".utf8)))
            await arrived.waitForArrivals(2)
            await clock.waitForSleepers(1)
            // One second ends both: the short inner deadline, and the inner call under the short outer one.
            clock.advance(by: .seconds(1))
            #expect(try await shortInner.value == Data("inner cut short".utf8))
            #expect(try await shortOuter.value == Data("inner cut short".utf8))
        }
    }
}
