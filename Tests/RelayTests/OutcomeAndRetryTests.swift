import Foundation
import Relay
import RelayTesting
import Testing

struct Boom: Error, CustomStringConvertible {
    var description: String { "boom" }
}

@Suite("S8 outcomes and retries", .timeLimit(.minutes(3)))
struct OutcomeAndRetryTests {
    @Test("S8: completed, skipped and failed outcomes become terminal states")
    func outcomesBecomeStates() async throws {
        try await withManualPoint { point, _ in
            point.register(ClosureExecutor { _, _ in .skipped }, for: "skips")
            point.register(ClosureExecutor { _, _ in .failed(reason: "bad input") }, for: "fails")
            let completed = try await point.enqueue(CallOperation(kind: .echo, payload: Data("ok".utf8)))
            let skipped = try await point.enqueue(CallOperation(kind: "skips"))
            let failed = try await point.enqueue(CallOperation(kind: "fails"))
            #expect(try await completed.outcome == .completed(Data("ok".utf8)))
            #expect(try await skipped.outcome == .skipped)
            #expect(try await failed.outcome == .failed(CallFailure(reason: "bad input", attempts: 1)))
            #expect(try await point.status(of: completed.id)?.state == .finished(.completed(Data("ok".utf8))))
            #expect(try await point.status(of: failed.id)?.state.isTerminal == true)
            let skippedError = await #expect(throws: RelayError.self) { try await skipped.value }
            #expect(skippedError?.code == .operationSkipped)
            let failedError = await #expect(throws: RelayError.self) { try await failed.value }
            #expect(failedError?.code == .operationFailed)
        }
    }

    @Test("S8: a terminal state never changes")
    func terminalNeverChanges() async throws {
        try await withManualPoint { point, _ in
            let handle = try await point.enqueue(CallOperation(kind: .echo))
            _ = try await handle.value
            let recorder = EventRecorder(point)
            #expect(try await point.cancel(handle.id) == false)
            let holdError = await #expect(throws: RelayError.self) {
                try await point.hold(handle.id, until: point.now.addingTimeInterval(60))
            }
            #expect(holdError?.code == .operationFinished)
            #expect(try await handle.outcome == .completed(Data()))
            #expect(recorder.events.isEmpty)
        }
    }

    @Test("S8: an executor that throws never crashes the engine; without retries it fails at once")
    func throwingExecutorFails() async throws {
        try await withManualPoint { point, _ in
            point.register(ClosureExecutor { _, _ in throw Boom() }, for: "throws")
            let handle = try await point.enqueue(CallOperation(kind: "throws", retryPolicy: .never))
            #expect(
                try await handle.outcome == .failed(CallFailure(reason: "boom", attempts: 1, cause: .retriesExhausted)))
            // The engine keeps running.
            #expect(
                try await point.execute(CallOperation(kind: .echo, payload: Data("alive".utf8))) == Data("alive".utf8))
        }
    }

    @Test("S8: backoff delays come from the RetryPolicy and run on the manual clock")
    func backoffOnManualClock() async throws {
        try await withManualPoint { point, clock in
            let attempts = Log<Int>()
            point.register(
                ClosureExecutor { _, context in
                    attempts.append(context.attempt)
                    return context.attempt < 4 ? .retry(reason: "busy") : .completed(Data("done".utf8))
                },
                for: "flaky"
            )
            let policy = RetryPolicy(maximumAttempts: 5, initialDelay: .seconds(1), multiplier: 2, jitter: .none)
            let recorder = EventRecorder(point)
            let start = point.now
            let handle = try await point.enqueue(CallOperation(kind: "flaky", retryPolicy: policy))
            var expectedDelay = 1.0
            var elapsed = 0.0
            for attempt in 1...3 {
                let scheduled = await recorder.waitFor(attempt) {
                    if case .retryScheduled = $0.kind.value { true } else { false }
                }
                guard case .retryScheduled(let number, let at, let reason) = scheduled[attempt - 1].kind.value else {
                    Issue.record("expected a retry")
                    return
                }
                elapsed += expectedDelay
                #expect(number == attempt)
                #expect(reason == "busy")
                #expect(abs(at.timeIntervalSince(start) - elapsed) < 1e-6)
                #expect(try await point.status(of: handle.id)?.state == .pending(.retry(at: at)))
                await clock.waitForSleepers(1)
                // Just before the deadline nothing starts.
                clock.advance(by: .seconds(expectedDelay) - .milliseconds(1))
                try await point.idle()
                #expect(attempts.all.count == attempt)
                clock.advance(by: .milliseconds(1))
                expectedDelay *= 2
            }
            #expect(try await handle.value == Data("done".utf8))
            #expect(attempts.all == [1, 2, 3, 4])
        }
    }

    @Test("S8: when the policy gives up after its attempts, the operation becomes failed")
    func giveUpBecomesFailed() async throws {
        try await withManualPoint { point, clock in
            point.register(ClosureExecutor { _, _ in .retry(reason: "still busy") }, for: "busy")
            let policy = RetryPolicy(maximumAttempts: 3, initialDelay: .seconds(1), jitter: .none)
            let handle = try await point.enqueue(CallOperation(kind: "busy", retryPolicy: policy))
            for _ in 0..<2 {
                try await point.idle()
                await clock.waitForSleepers(1)
                clock.advance(by: .seconds(10))
            }
            #expect(
                try await handle.outcome
                    == .failed(CallFailure(reason: "still busy", attempts: 3, cause: .retriesExhausted)))
        }
    }

    @Test("S8: idle() waits for a retry the manual clock has just passed to start and end, in every round")
    func idleWaitsForDueRetries() async throws {
        try await withManualPoint { point, clock in
            point.register(
                ClosureExecutor { _, context in
                    context.attempt == 1 ? .retry(after: .seconds(10), reason: "busy") : .completed(Data())
                },
                for: "busy")
            for round in 0..<100 {
                let operation = CallOperation(kind: "busy")
                try await point.enqueue(operation)
                try await point.idle()
                guard case .pending(let waiting) = try await point.status(of: operation.id)?.state,
                    case .retry = waiting.value
                else {
                    Issue.record("round \(round): expected a scheduled retry")
                    return
                }
                clock.advance(by: .seconds(10))
                try await point.idle()
                #expect(
                    try await point.status(of: operation.id)?.state == .finished(.completed(Data())), "round \(round)")
            }
        }
    }

    @Test("S8: thrown errors are retried under the policy like retry outcomes")
    func thrownErrorsRetry() async throws {
        try await withManualPoint { point, clock in
            point.register(
                ClosureExecutor { _, context in
                    if context.attempt == 1 { throw Boom() }
                    return .completed(Data())
                },
                for: "once"
            )
            let policy = RetryPolicy(maximumAttempts: 2, initialDelay: .seconds(2), jitter: .none)
            let handle = try await point.enqueue(CallOperation(kind: "once", retryPolicy: policy))
            try await point.idle()
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(2))
            #expect(try await handle.value == Data())
            #expect((try await handle.status)?.attempts == 2)
        }
    }

    @Test("S8: the maximum elapsed time gives up before the attempts run out")
    func maximumElapsedGivesUp() async throws {
        try await withManualPoint { point, clock in
            point.register(ClosureExecutor { _, _ in .retry(reason: "slow") }, for: "slow")
            let policy = RetryPolicy(
                maximumAttempts: 100,
                initialDelay: .seconds(4),
                multiplier: 1,
                maximumElapsed: .seconds(10),
                jitter: .none
            )
            let handle = try await point.enqueue(CallOperation(kind: "slow", retryPolicy: policy))
            for _ in 0..<2 {
                try await point.idle()
                await clock.waitForSleepers(1)
                clock.advance(by: .seconds(4))
            }
            // Attempt 3 ends at 8 s; a fourth would start at 12 s, past the 10 s limit.
            #expect(
                try await handle.outcome == .failed(CallFailure(reason: "slow", attempts: 3, cause: .retriesExhausted)))
        }
    }

    @Test("S8: a delay the executor asks for replaces the computed backoff")
    func requestedDelayWins() async throws {
        try await withManualPoint { point, clock in
            point.register(
                ClosureExecutor { _, context in
                    context.attempt == 1 ? .retry(after: .seconds(30), reason: "later") : .completed(Data())
                },
                for: "later"
            )
            let handle = try await point.enqueue(
                CallOperation(kind: "later", retryPolicy: RetryPolicy(initialDelay: .seconds(1), jitter: .none))
            )
            try await point.idle()
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(29))
            try await point.idle()
            #expect((try await handle.status)?.attempts == 1)
            clock.advance(by: .seconds(1))
            #expect(try await handle.value == Data())
        }
    }

    @Test("S8: exponential bounds grow by the multiplier and stop at the cap")
    func delayBounds() {
        let policy = RetryPolicy(initialDelay: .milliseconds(100), multiplier: 3, maximumDelay: .seconds(2))
        #expect(policy.delayBound(afterAttempt: 1) == .milliseconds(100))
        #expect(policy.delayBound(afterAttempt: 2) == .milliseconds(300))
        #expect(policy.delayBound(afterAttempt: 3) == .milliseconds(900))
        #expect(policy.delayBound(afterAttempt: 4) == .seconds(2))
        #expect(policy.delayBound(afterAttempt: 400) == .seconds(2))
    }

    @Test("S8: full jitter draws delays between zero and the bound")
    func fullJitter() {
        let policy = RetryPolicy(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(8), jitter: .full)
        var generator = SplitMix64(seed: 42)
        var delays: [Duration] = []
        for attempt in 1...6 {
            for _ in 0..<200 {
                let delay = policy.delay(afterAttempt: attempt, using: &generator)
                #expect(delay >= .zero && delay <= policy.delayBound(afterAttempt: attempt))
                delays.append(delay)
            }
        }
        #expect(Set(delays).count > 1000)
    }

    @Test("S8: the policy gives up after the maximum attempts and past the maximum elapsed time")
    func policyGivesUp() {
        let policy = RetryPolicy(
            maximumAttempts: 3, initialDelay: .seconds(1), maximumElapsed: .seconds(5), jitter: .none)
        var generator = SplitMix64(seed: 1)
        #expect(
            policy.nextDelay(afterAttempt: 1, elapsed: .zero, requestedDelay: nil, using: &generator) == .seconds(1))
        #expect(policy.nextDelay(afterAttempt: 3, elapsed: .zero, requestedDelay: nil, using: &generator) == nil)
        #expect(policy.nextDelay(afterAttempt: 2, elapsed: .seconds(4), requestedDelay: nil, using: &generator) == nil)
        #expect(
            policy.nextDelay(afterAttempt: 1, elapsed: .zero, requestedDelay: .seconds(3), using: &generator)
                == .seconds(3))
    }
}
