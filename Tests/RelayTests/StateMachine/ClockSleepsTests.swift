import Foundation
import Testing

@testable import Relay

/// The machine's account of executors asleep on a manual clock, which ends a test's wait for idle when only the clock
/// could move what runs.
@Suite("Clock sleeps in the state machine")
struct ClockSleepsTests {
    @Test("S12: the machine wakes a wait for idle once every running operation sleeps, with their ids")
    func stallWakesTheWait() async throws {
        var test = try MachineUnderTest()
        let operation = CallOperation(kind: "noop")
        try test.enqueue([operation], now: 0)
        let (_, job) = try test.spawnAndStart()
        _ = test.takeActions()
        #expect(test.machine.stalledOperations(now: 0) == nil)
        let stalled = await withCheckedContinuation { continuation in
            // Running and awake: the wait parks.
            #expect(test.machine.waitUntilIdleOrStalled(now: 0, id: 1, continuation) == nil)
            #expect(test.takeActions().effects.stallWakes.isEmpty)
            test.machine.noteClockSleep(job.slot, began: true)
            let actions = test.takeActions().effects
            #expect(actions.stallWakes.count == 1)
            actions.perform()
        }
        #expect(stalled == [operation.id])
        // Woken, it no longer counts; a new wait parks again.
        test.machine.noteClockSleep(job.slot, began: false)
        #expect(test.machine.stalledOperations(now: 0) == nil)
    }

    @Test("S12: a sleep that outlives its attempt does not count, and a wait for idle ends as idle")
    func endedAttemptForgetsItsSleeps() async throws {
        var test = try MachineUnderTest()
        let operation = CallOperation(kind: "noop")
        try test.enqueue([operation], now: 0)
        let (worker, job) = try test.spawnAndStart()
        test.machine.noteClockSleep(job.slot, began: true)
        #expect(test.machine.stalledOperations(now: 0) == [operation.id])
        let ended = await withCheckedContinuation { continuation in
            #expect(test.machine.waitUntilIdleOrStalled(now: 0, id: 1, continuation) == [operation.id])
            continuation.resume(returning: [])
        }
        #expect(ended.isEmpty)
        let stalled = await withCheckedContinuation { continuation in
            test.machine.noteClockSleep(job.slot, began: false)
            _ = test.takeActions()
            #expect(test.machine.waitUntilIdleOrStalled(now: 0, id: 2, continuation) == nil)
            _ = test.step(worker, ended: [.completed(job)])
            let actions = test.takeActions().effects
            #expect(actions.stallWakes.count == 1)
            actions.perform()
        }
        #expect(stalled.isEmpty)
        // A late end of a sleep of the finished attempt changes nothing.
        test.machine.noteClockSleep(job.slot, began: false)
        #expect(test.machine.stalledOperations(now: 0) == nil)
    }
}
