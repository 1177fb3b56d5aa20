import Foundation
import Testing

@testable import Relay

/// The timer loop's plans, and retention: when finished operations are forgotten.
@Suite("Pipeline state machine: timers and retention")
struct TimerAndRetentionTests {
    @Test("S16: past the retention window a finished operation is forgotten, and its record leaves with the effects")
    func forgettingHandsRecordsOut() throws {
        var test = try MachineUnderTest()
        let finished = CallOperation(kind: "noop")
        weak let record = try test.enqueue([finished], now: 0).first
        do {
            let (worker, job) = try test.spawnAndStart()
            _ = test.step(worker, ended: [.completed(job)], now: 5)
        }
        test.takeActions().effects.perform()
        #expect(test.lookup(finished.id) != nil)

        // The retention window is one second: a sweep before it keeps the finished operation, and after it,
        // forgets it.
        let more1 = test.forgetExpired(now: 500_000_000)
        #expect(!more1)
        #expect(test.lookup(finished.id) != nil)
        let more2 = test.forgetExpired(now: 2_000_000_000)
        #expect(!more2)
        #expect(test.lookup(finished.id) == nil)
        var actions = test.takeActions()
        #expect(actions.effects.released.map(\.id) == [finished.id])
        #expect(record != nil)
        actions.effects.released.removeAll()
        #expect(record == nil)
    }

    @Test("S16: with a window of zero, a worker forgets what it finishes; its id and record go at the next sweep")
    func zeroWindowForgetsAtFinish() throws {
        var test = try MachineUnderTest(retention: 0)
        let first = CallOperation(kind: "noop")
        let dependent = CallOperation(kind: "noop", dependencies: [first.id])
        weak let record = try test.enqueue([first, dependent], now: 0).first
        let worker: UInt64
        let ended: PipelineStateMachine.EndedAttempt
        do {
            // Scoped, so that the job lets go of the record.
            let started = try test.spawnAndStart()
            (worker, ended) = (started.worker, .completed(started.job))
        }
        // Cancelled while its dependency runs, the dependent stays: the dependency still lists it.
        #expect(try test.cancel(dependent.id, now: 1))
        #expect(test.lookup(dependent.id) != nil)
        _ = test.takeActions()

        // The dependency's end forgets both. Workers never hold the directory, so both stay known, finished, until a
        // transition that holds it vacates them: a commit, or the timer loop's sweep, which is due a gap after the
        // last one.
        guard case .wait(let generation) = test.machine.timerPlan() else {
            Issue.record("expected the timer loop to wait")
            return
        }
        #expect(test.step(worker, ended: [ended], now: 2).parks)
        #expect(test.machine.timerPlan() == .sleep(until: Retention.sweepGap, generation: generation + 1))
        let sweepDue = test.machine.fireTimers(now: Retention.sweepGap, into: &test.actions)
        #expect(sweepDue)
        #expect(test.state(of: first.id) == .finished(.completed(Data())))
        do {
            let actions = test.takeActions()
            #expect(actions.effects.released.isEmpty)
            actions.effects.perform()
            #expect(record?.settled != nil)
        }
        test.forgetExpired(now: Retention.sweepGap)
        #expect(test.machine.timerPlan() == .wait(generation: generation + 1))
        #expect(test.lookup(first.id) == nil)
        #expect(test.lookup(dependent.id) == nil)
        #expect(Set(test.takeActions().effects.released.map(\.id)) == [first.id, dependent.id])
        #expect(record == nil)
    }

    @Test("S16: the first finished operation arms the timer for its window's end; sweeps come when due, a gap apart")
    func retentionArmsTheTimer() throws {
        var test = try MachineUnderTest()
        let operations = (0..<2).map { _ in CallOperation(kind: "noop") }
        try test.enqueue(operations, now: 0)
        guard case .wait(let generation) = test.machine.timerPlan() else {
            Issue.record("expected the timer loop to wait")
            return
        }

        // The retention window is one second. The first operation to finish makes the loop's plan stale; the second,
        // whose window ends later, does not.
        _ = try test.cancel(operations[0].id, now: 0)
        let armed = Timers.Plan.sleep(until: 1_000_000_000, generation: generation + 1)
        #expect(test.machine.timerPlan() == armed)
        _ = try test.cancel(operations[1].id, now: 500_000_000)
        #expect(test.machine.timerPlan() == armed)
        // A wake before the sweep is due, such as that rearm, forgets nothing.
        let due3 = test.machine.fireTimers(now: 500_000_000, into: &test.actions)
        #expect(!due3)
        let due4 = test.machine.fireTimers(now: 1_000_000_000, into: &test.actions)
        #expect(due4)

        // A sweep at the first window's end forgets only the first; the next comes a gap later, not at the second
        // window's end, half a second on.
        // Forgetting the first queued its slot to be vacated, which made the plan stale once more.
        let more5 = test.forgetExpired(now: 1_000_000_000)
        #expect(!more5)
        #expect(operations.map { test.lookup($0.id) == nil } == [true, false])
        #expect(test.machine.timerPlan() == .sleep(until: 2_000_000_000, generation: generation + 2))
        let more6 = test.forgetExpired(now: 2_000_000_000)
        #expect(!more6)
        #expect(test.lookup(operations[1].id) == nil)
        #expect(test.machine.timerPlan() == .wait(generation: generation + 2))
    }

    @Test("S16: a sweep forgets at most its limit at a time, oldest first, and tells whether more remain")
    func forgettingInSteps() throws {
        var test = try MachineUnderTest()
        let operations = (0..<3).map { _ in CallOperation(kind: "noop") }
        try test.enqueue(operations, now: 0)
        for (offset, operation) in operations.enumerated() {
            #expect(try test.cancel(operation.id, now: Int64(offset)))
        }
        _ = test.takeActions()

        let more7 = test.forgetExpired(now: 2_000_000_000, limit: 2)
        #expect(more7)
        #expect(operations.map { test.lookup($0.id) == nil } == [true, true, false])
        let more8 = test.forgetExpired(now: 2_000_000_000, limit: 2)
        #expect(!more8)
        #expect(test.lookup(operations[2].id) == nil)
        #expect(test.takeActions().effects.released.map(\.id) == operations.map(\.id))
    }

    @Test("S8: a retry delay plans a wake at its end, and the wake makes the operation ready again")
    func retryPlansAWake() throws {
        var test = try MachineUnderTest()
        let operation = CallOperation(kind: "noop", retryPolicy: RetryPolicy(maximumAttempts: 3))
        try test.enqueue([operation], now: 0)
        let (worker, job) = try test.spawnAndStart()
        let retry = PipelineStateMachine.EndedAttempt(
            slot: job.slot, end: .outcome(.retry(after: .seconds(5), reason: "busy")))
        #expect(test.startNext(worker, ended: [retry], now: 1) == nil)
        let retryAt = 5_000_000_001 as Int64
        #expect(test.state(of: operation.id, now: 1) == .pending(.retry(at: test.machine.date(retryAt))))
        guard case .sleep(until: retryAt, _) = test.machine.timerPlan() else {
            Issue.record("expected the loop to sleep until the retry")
            return
        }
        test.machine.fireTimers(now: retryAt - 1, into: &test.actions)
        #expect(test.state(of: operation.id, now: retryAt - 1) != .pending(.ready))
        test.machine.fireTimers(now: retryAt, into: &test.actions)
        #expect(test.state(of: operation.id, now: retryAt) == .pending(.ready))
    }
}
