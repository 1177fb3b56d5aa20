import Foundation
import Testing

@testable import Relay

/// The state machine of a DataPoint on a shared store, as the actions its events return.
@Suite("Pipeline state machine: a shared store")
struct SharedStoreMachineTests {
    @Test("S28: on a shared store, a retry hands its operation to the store and frees the lane; a claim runs it again")
    func retryHandedToStore() throws {
        var test = try MachineUnderTest(bunchSize: 1, sharing: true)
        let first = CallOperation(kind: "noop")
        let second = CallOperation(kind: "noop")
        let records = try test.enqueue([first, second], now: 0)
        let (worker, job) = try test.spawnAndStart()
        #expect(job.record.id == first.id)
        _ = test.takeActions()

        let retry = PipelineStateMachine.EndedAttempt(
            slot: job.slot, end: .outcome(.retry(after: .seconds(100), reason: "busy")))
        #expect(test.startNext(worker, ended: [retry], now: 0) == second.id, "the lane's one slot is free at once")
        let actions = test.takeActions()
        #expect(actions.effects.handedToStore.map(\.id) == [first.id], "its handles wait for the store's report")
        #expect(actions.effects.settlements.isEmpty, "it has no outcome")
        #expect(actions.records.contains { $0.kind == .retryScheduled && $0.operationID == first.id })
        #expect(test.lookup(first.id) == nil, "nothing here finds it: the store answers for it")
        #expect(test.counts.pending == 0 && test.counts.running == 1)
        #expect(records[0].settled == nil)

        // Claimed here again once its time comes, before its slot was vacated: it runs, from its stored attempts.
        let finished = test.adopt(
            [StoredOperation(operation: first, snapshot: 1, attempts: 1, enqueuedAt: Date(timeIntervalSince1970: 0))],
            now: 100_000_000_000)
        #expect(finished.isEmpty, "not taken for an operation this process finished")
        #expect(test.state(of: first.id, now: 100_000_000_000) == .pending(.ready))
        let running = try #require(test.lookup(second.id))
        let done = PipelineStateMachine.EndedAttempt(slot: running, end: .outcome(.completed(Data())))
        #expect(test.startNext(worker, ended: [done], now: 100_000_000_000) == first.id)
        #expect(test.status(of: first.id, now: 100_000_000_000)?.state == .running(attempt: 2))
    }

    @Test("S8: on its own store, a retry stays in the graph, waiting for its time")
    func retryStaysHere() throws {
        var test = try MachineUnderTest(bunchSize: 1)
        try test.enqueue([CallOperation(kind: "noop")], now: 0)
        let (worker, job) = try test.spawnAndStart()
        let retry = PipelineStateMachine.EndedAttempt(
            slot: job.slot, end: .outcome(.retry(after: .seconds(100), reason: "busy")))
        #expect(test.startNext(worker, ended: [retry], now: 0) == nil)
        #expect(test.takeActions().effects.handedToStore.isEmpty)
        #expect(test.state(of: job.record.id) == .pending(.retry(at: Date(timeIntervalSince1970: 100))))
    }
}
