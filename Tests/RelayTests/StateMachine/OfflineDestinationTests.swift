import Foundation
import Testing

@testable import Relay

/// S9's offline destinations, as actions of the state machine: who waits, what starts, when probes fall due.
@Suite("Pipeline state machine: offline destinations")
struct OfflineDestinationTests {
    private static let millisecond: Int64 = 1_000_000

    /// A lane of one worker with executors for the `mail` and `sms` kinds, each kind its own destination.
    private static func machine() throws -> MachineUnderTest {
        var test = try MachineUnderTest(bunchSize: 1)
        test.machine.register(MachineUnderTest.Noop(), for: "mail", now: 0, into: &test.actions)
        test.machine.register(MachineUnderTest.Noop(), for: "sms", now: 0, into: &test.actions)
        return test
    }

    private static func offline(_ job: PipelineStateMachine.Job) -> PipelineStateMachine.EndedAttempt {
        .init(slot: job.slot, end: .outcome(.offline(reason: "mail: connection refused")))
    }

    @Test("S9: an operation that finds its destination offline waits for it, unstarted ones too; others go on")
    func otherDestinationsGoOn() throws {
        var test = try Self.machine()
        let first = CallOperation(kind: "mail")
        let second = CallOperation(kind: "mail")
        let other = CallOperation(kind: "sms")
        try test.enqueue([first, second, other], now: 0)
        let (worker, job) = try test.spawnAndStart()
        #expect(job.record.id == first.id)
        _ = test.takeActions()

        // The second mail is never started: the worker goes on to the other destination.
        guard case .run(let next) = test.step(worker, ended: [Self.offline(job)], now: 1) else {
            Issue.record("expected the other destination's operation to start")
            return
        }
        #expect(next.record.id == other.id)
        let actions = test.takeActions()
        #expect(actions.records.contains { $0.kind == .attemptReturned })
        #expect(!actions.records.contains { $0.kind == .started && $0.operationID == second.id })
        for id in [first.id, second.id] {
            #expect(
                test.state(of: id, now: 1)
                    == .pending(.offline("mail: connection refused, since 1970-01-01T00:00:00.000Z")))
            #expect(test.status(of: id, now: 1)?.attempts == 0)
        }
        #expect(test.counts.offline == 2)
        #expect(test.machine.offlineReason(of: .data) == "mail: connection refused")
    }

    @Test("S9: a probe falls due on the clock, backs off when unanswered, and an answer lets the waiting start")
    func probesBackOffThenRelease() throws {
        var test = try Self.machine()
        let first = CallOperation(kind: "mail")
        let second = CallOperation(kind: "mail")
        try test.enqueue([first, second], now: 0)
        let (worker, job) = try test.spawnAndStart()
        #expect(test.step(worker, ended: [Self.offline(job)], now: 0).parks)

        // Nothing is due before a quarter of a second.
        test.machine.fireTimers(now: 249 * Self.millisecond, into: &test.actions)
        #expect(test.step(worker, now: 249 * Self.millisecond).parks)
        test.machine.fireTimers(now: 250 * Self.millisecond, into: &test.actions)
        guard case .probe(_, let operation, let destination) = test.step(worker, now: 250 * Self.millisecond) else {
            Issue.record("expected the due probe to be the worker's next job")
            return
        }
        #expect(operation.id == first.id)
        #expect(destination == "mail")

        // Unanswered: the next one is twice as far.
        test.machine.probeEnded(
            destination: "mail", lane: test.lane, worker: worker, answered: false, now: 300 * Self.millisecond,
            into: &test.actions)
        test.machine.fireTimers(now: 799 * Self.millisecond, into: &test.actions)
        #expect(test.step(worker, now: 799 * Self.millisecond).parks)
        test.machine.fireTimers(now: 800 * Self.millisecond, into: &test.actions)
        guard case .probe = test.step(worker, now: 800 * Self.millisecond) else {
            Issue.record("expected the second probe")
            return
        }
        test.machine.probeEnded(
            destination: "mail", lane: test.lane, worker: worker, answered: true, now: 900 * Self.millisecond,
            into: &test.actions)
        #expect(test.counts.offline == 0)
        #expect(test.state(of: second.id, now: 900 * Self.millisecond) == .pending(.ready))
        #expect(test.startNext(worker, now: 900 * Self.millisecond) == first.id)
    }

    @Test("S9: past its maximum elapsed time while offline, an operation fails with the cause offlineTooLong")
    func offlinePastMaximumElapsedFails() throws {
        var test = try Self.machine()
        let operation = CallOperation(kind: "mail", retryPolicy: RetryPolicy(maximumElapsed: .seconds(1)))
        try test.enqueue([operation], now: 0)
        let (worker, job) = try test.spawnAndStart()
        _ = test.step(worker, ended: [Self.offline(job)], now: 0)
        // Probes keep failing meanwhile: at 250 ms, then at 750 ms, when the next is planned for 1,750 ms.
        for now in [250 * Self.millisecond, 750 * Self.millisecond] {
            test.machine.fireTimers(now: now, into: &test.actions)
            guard case .probe = test.step(worker, now: now) else {
                Issue.record("expected a probe")
                return
            }
            test.machine.probeEnded(
                destination: "mail", lane: test.lane, worker: worker, answered: false, now: now, into: &test.actions)
        }
        test.machine.fireTimers(now: 1_000 * Self.millisecond, into: &test.actions)
        guard case .finished(.failed(let failure)) = test.state(of: operation.id, now: 1_000 * Self.millisecond) else {
            Issue.record("expected the operation to fail once its maximum elapsed time passed")
            return
        }
        #expect(failure.cause == .offlineTooLong)
        #expect(failure.reason.contains("mail: connection refused"))
        #expect(test.counts.offline == 0)
    }

    @Test("S9: after three rounds of a probe answering at once, the operation's offline outcomes spend attempts")
    func answeringProbesEndTheFreeRounds() throws {
        var test = try Self.machine()
        let operation = CallOperation(kind: "mail", retryPolicy: RetryPolicy(maximumAttempts: 2))
        try test.enqueue([operation], now: 0)
        var (worker, job) = try test.spawnAndStart()
        var now: Int64 = 0
        for _ in 0..<OfflineDestinations.freeRounds {
            _ = test.step(worker, ended: [Self.offline(job)], now: now)
            #expect(test.status(of: operation.id, now: now)?.attempts == 0)
            now += 250 * Self.millisecond
            test.machine.fireTimers(now: now, into: &test.actions)
            guard case .probe = test.step(worker, now: now) else {
                Issue.record("expected a probe")
                return
            }
            test.machine.probeEnded(
                destination: "mail", lane: test.lane, worker: worker, answered: true, now: now, into: &test.actions)
            guard case .run(let again) = test.step(worker, now: now) else {
                Issue.record("expected the operation to run again")
                return
            }
            job = again
        }
        // The fourth offline outcome is a failed attempt; the retry's spends the last one.
        _ = test.step(worker, ended: [Self.offline(job)], now: now)
        guard case .pending(let waiting) = test.state(of: operation.id, now: now), case .retry = waiting.value else {
            Issue.record("expected a retry")
            return
        }
        #expect(test.status(of: operation.id, now: now)?.attempts == 1)
        // Past any backoff.
        now += 3_600 * 1_000 * Self.millisecond
        test.machine.fireTimers(now: now, into: &test.actions)
        guard case .run(let last) = test.step(worker, now: now) else {
            Issue.record("expected the retry to run")
            return
        }
        _ = test.step(worker, ended: [Self.offline(last)], now: now)
        guard case .finished(.failed(let failure)) = test.state(of: operation.id, now: now) else {
            Issue.record("expected the operation to fail")
            return
        }
        #expect(failure.cause == .retriesExhausted)
        #expect(failure.attempts == 2)
        #expect(failure.reason.contains("answered 3 probes"))
    }
}
