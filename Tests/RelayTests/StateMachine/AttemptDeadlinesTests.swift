import Foundation
import Testing

@testable import Relay

/// The deadlines of running attempts, on their own, and what a passed deadline does to the pipeline's state.
@Suite("Attempt deadlines")
struct AttemptDeadlinesTests {
    private static func attempt(slot: Int32 = 4, worker: UInt64 = 9, number: Int = 1) -> AttemptDeadlines.Attempt {
        AttemptDeadlines.Attempt(slot: slot, worker: worker, number: number, operationID: UUID())
    }

    @Test("S12: a nested attempt deadline never outlives the outer one; the outer is restored when the inner ends")
    func nestedAttemptDeadlines() {
        var deadlines = AttemptDeadlines()
        let attempt = Self.attempt()
        let (none, _) = deadlines.arm(attempt, at: 100)
        #expect(none == nil)
        // The inner asks for more time than the outer has left: it gets the outer's deadline.
        let (outer, _) = deadlines.arm(attempt, at: 500)
        #expect(outer?.deadline == 100)
        #expect(deadlines.plan() == .sleep(until: 100, generation: 2))
        #expect(deadlines.fire(now: 99).isEmpty)
        #expect(deadlines.fire(now: 100) == [attempt])
        #expect(deadlines.fire(now: 100).isEmpty)
        // It passed for both: ending the inner reports it, and the outer stays fired, so nothing is left to fire.
        let (fired, _) = deadlines.disarm(4, restoring: outer)
        #expect(fired)
        #expect(deadlines.plan() == .wait(generation: 2))
        let (outerFired, _) = deadlines.disarm(4, restoring: nil)
        #expect(outerFired)
    }

    @Test("S12: a deadline disarmed before it passes never fires, and the loop plans past it")
    func disarmedDeadlinesNeverFire() {
        var deadlines = AttemptDeadlines()
        let early = Self.attempt(slot: 1)
        let late = Self.attempt(slot: 2)
        _ = deadlines.arm(early, at: 10)
        _ = deadlines.arm(late, at: 20)
        let (fired, _) = deadlines.disarm(1, restoring: nil)
        #expect(!fired)
        #expect(deadlines.plan() == .sleep(until: 20, generation: 2))
        #expect(deadlines.fire(now: 30) == [late])
    }

    @Test("S8: the loop's plan goes stale only for a deadline earlier than the one it sleeps toward")
    func plansGoStaleForEarlierDeadlines() {
        var deadlines = AttemptDeadlines()
        #expect(deadlines.plan() == .wait(generation: 0))
        _ = deadlines.arm(Self.attempt(slot: 1), at: 50)
        #expect(deadlines.plan() == .sleep(until: 50, generation: 1))
        // Later deadlines, nearly all of a server's, leave the loop asleep.
        _ = deadlines.arm(Self.attempt(slot: 2), at: 70)
        #expect(deadlines.plan() == .sleep(until: 50, generation: 1))
        _ = deadlines.arm(Self.attempt(slot: 3), at: 40)
        #expect(deadlines.plan() == .sleep(until: 40, generation: 2))
        // Between a wake and the next plan, any deadline makes the loop plan again.
        #expect(deadlines.fire(now: 45).count == 1)
        _ = deadlines.arm(Self.attempt(slot: 4), at: 90)
        #expect(deadlines.plan() == .sleep(until: 50, generation: 3))
    }

    @Test("S12: attempts that end first leave no pile of entries behind")
    func endedAttemptsAreShed() {
        var deadlines = AttemptDeadlines()
        _ = deadlines.arm(Self.attempt(slot: 0), at: 1_000_000)
        _ = deadlines.plan()
        for slot in Int32(1)...10_000 {
            _ = deadlines.arm(Self.attempt(slot: slot), at: 2_000_000 + Int64(slot))
            _ = deadlines.disarm(slot, restoring: nil)
        }
        #expect(deadlines.heldEntries < 100)
        #expect(deadlines.fire(now: .max).count == 1)
    }

    @Test("S12: a closed loop exits and parks no wait")
    func closedLoopExits() {
        var deadlines = AttemptDeadlines()
        _ = deadlines.arm(Self.attempt(), at: 10)
        #expect(deadlines.close().isEmpty)
        #expect(deadlines.plan() == .exit)
    }

    @Test("S12: a passed deadline cancels its worker only while the worker still runs that attempt")
    func expiryCancelsOnlyTheRunningAttempt() throws {
        var test = try MachineUnderTest()
        let operations = [CallOperation(kind: "noop"), CallOperation(kind: "noop")]
        try test.enqueue(operations, now: 0)
        let (worker, job) = try test.spawnAndStart()
        let running = AttemptDeadlines.Attempt(
            slot: job.slot, worker: worker, number: job.attempt, operationID: job.record.id)
        // Another attempt's deadline, or another operation's, cancels nothing.
        let later = AttemptDeadlines.Attempt(
            slot: job.slot, worker: worker, number: job.attempt + 1, operationID: job.record.id)
        let other = AttemptDeadlines.Attempt(
            slot: job.slot, worker: worker, number: job.attempt, operationID: UUID())
        test.machine.expireAttempts([later, other], into: &test.actions)
        #expect(test.machine.workers[worker]?.doomed == false)
        // Once the attempt has ended, its deadline passing cancels the worker's next one no more.
        #expect(test.startNext(worker, ended: [.completed(job)], now: 1) == operations[1].id)
        test.machine.expireAttempts([running], into: &test.actions)
        #expect(test.machine.workers[worker]?.doomed == false)
    }

    @Test("S12: a passed deadline of a running attempt cancels its worker")
    func expiryCancelsTheWorker() throws {
        var test = try MachineUnderTest()
        try test.enqueue([CallOperation(kind: "noop")], now: 0)
        let (worker, job) = try test.spawnAndStart()
        let running = AttemptDeadlines.Attempt(
            slot: job.slot, worker: worker, number: job.attempt, operationID: job.record.id)
        test.machine.expireAttempts([running], into: &test.actions)
        #expect(test.machine.workers[worker]?.doomed == true)
    }
}
