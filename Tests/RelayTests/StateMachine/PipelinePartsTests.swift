import Foundation
import RelayTesting
import Testing

@testable import Relay

/// The pipeline's data structures, and the timer part, on their own.
@Suite("Pipeline parts")
struct PipelinePartsTests {
    @Test("S4/S6: the ready queue orders by priority, then by order, including late arrivals")
    func readyQueueOrder() {
        var queue = ReadyQueue()
        for (order, priority) in [(5, 0), (6, 0), (2, 0), (7, 3), (1, 3), (9, -1), (3, 0)] {
            queue.push(.init(order: UInt64(order), slot: Int32(order), token: 0), priority: priority)
        }
        var popped: [UInt64] = []
        while let entry = queue.popFirst() { popped.append(entry.order) }
        #expect(popped == [1, 7, 2, 3, 5, 6, 9])
    }

    @Test("the min-heap pops in ascending order")
    func minHeap() {
        var heap = MinHeap<Int>()
        var generator = SplitMix64(seed: 3)
        let values = (0..<500).map { _ in Int.random(in: -1000...1000, using: &generator) }
        for value in values { heap.push(value) }
        var popped: [Int] = []
        while let value = heap.popMin() { popped.append(value) }
        #expect(popped == values.sorted())
    }

    @Test("S14: the latency window keeps the latest samples and ranks them by nearest rank")
    func latencyWindow() {
        var window = LatencyWindow(capacity: 10)
        for value in 1...25 { window.record(Int64(value)) }
        let percentiles = window.percentiles()
        // The window holds 16...25.
        #expect(percentiles.samples == 10)
        #expect(percentiles.p50 == .nanoseconds(20))
        #expect(percentiles.p90 == .nanoseconds(24))
        #expect(percentiles.p99 == .nanoseconds(25))
        #expect(LatencyWindow(capacity: 5).percentiles() == .empty)
    }

    @Test("the operation index agrees with a dictionary through inserts, removals and growth")
    func operationIndexMatchesDictionary() {
        var index = OperationIndex(capacity: 4)
        var idOfSlot: [Int32: UUID] = [:]
        var generator = SplitMix64(seed: 11)
        var live: [Int32] = []
        func find(_ id: UUID) -> OperationIndex.Probe {
            index.probe(id, hash: OperationIndex.hash(id)) { idOfSlot[$0] == id }
        }
        for step in Int32(0)..<20_000 {
            if live.isEmpty || Int.random(in: 0..<3, using: &generator) > 0 {
                let id = UUID()
                index.reserve(1)
                guard case .vacant(let bucket, let hash) = find(id) else {
                    Issue.record("a new id was found")
                    return
                }
                index.insert(step, hash: hash, at: bucket)
                idOfSlot[step] = id
                live.append(step)
            } else {
                let slot = live.remove(at: Int.random(in: 0..<live.count, using: &generator))
                index.remove(hash: OperationIndex.hash(idOfSlot[slot]!), slot: slot)
                idOfSlot[slot] = nil
            }
        }
        #expect(index.count == live.count)
        for slot in live {
            guard case .found(let found) = find(idOfSlot[slot]!) else {
                Issue.record("slot \(slot) is missing")
                return
            }
            #expect(found == slot)
        }
        if case .found = find(UUID()) { Issue.record("an unknown id was found") }
    }

    @Test("S8: a hold's end and a retry time both bound the start; releasing every hold leaves the retry")
    func holdsAndRetries() {
        var timers = Timers()
        #expect(timers.notBefore(3) == OperationSlot.never)
        let held1 = timers.hold(3, until: 50, context: "a")
        #expect(held1)
        let held2 = timers.hold(3, until: 80, context: nil)
        #expect(held2)
        timers.retry(3, at: 60)
        #expect(timers.notBefore(3) == 80)
        #expect(timers.holdEnd(3) == 80)
        let held3 = timers.hold(3, until: nil, context: nil)
        #expect(held3)
        #expect(timers.notBefore(3) == 60)
        let held4 = timers.hold(3, until: nil, context: "a")
        #expect(held4)
        #expect(timers.holds(of: 3).isEmpty)
        timers.forget(3)
        let held5 = timers.hold(3, until: nil, context: "a")
        #expect(!held5)
        #expect(timers.notBefore(3) == OperationSlot.never)
    }

    @Test("S8: wake-ups come out when due, earliest first, each with the token it was scheduled under")
    func wakeupsComeOutWhenDue() {
        var timers = Timers()
        _ = timers.wake(1, token: 7, at: 30)
        _ = timers.wake(2, token: 1, at: 10)
        _ = timers.wake(1, token: 8, at: 20)
        #expect(timers.nextDeadline == 10)
        #expect(timers.takeDueWakeup(now: 5) == nil)
        var due: [Int32] = []
        var tokens: [UInt32] = []
        while let (slot, token) = timers.takeDueWakeup(now: 25) {
            due.append(slot)
            tokens.append(token)
        }
        #expect(due == [2, 1])
        #expect(tokens == [1, 8])
        #expect(timers.nextDeadline == 30)
    }

    @Test("S8: a plan goes stale only for a deadline earlier than the one it sleeps toward")
    func plansGoStaleForEarlierDeadlines() {
        var timers = Timers()
        guard case .wait(let generation) = timers.plan(until: timers.nextDeadline) else {
            Issue.record("expected a wait")
            return
        }
        _ = timers.wake(1, token: 0, at: 50)
        #expect(timers.plan(until: timers.nextDeadline) == .sleep(until: 50, generation: generation + 1))
        _ = timers.wake(2, token: 0, at: 70)
        #expect(timers.plan(until: timers.nextDeadline) == .sleep(until: 50, generation: generation + 1))
        _ = timers.wake(3, token: 0, at: 40)
        #expect(timers.plan(until: timers.nextDeadline) == .sleep(until: 40, generation: generation + 2))
    }
}
