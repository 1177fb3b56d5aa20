import Foundation
import Testing

@testable import Relay

/// Batches: a worker whose lane's operations finish fast claims several ready operations in one step; the pipeline
/// can stop the batch between two of them.
@Suite("Pipeline state machine: worker batches")
struct WorkerBatchTests {
    /// A worker of a lane of `bunchSize` that ran the first of `count` operations and claimed the rest it may.
    private struct Batch {
        var test: MachineUnderTest
        let operations: [CallOperation]
        let worker: UInt64
        /// Workers the lane spawned beside it, which have not taken a step.
        let others: [UInt64]
        /// The batch the worker's loop holds.
        let shared: WorkerBatch
        var jobs: [PipelineStateMachine.Job] = []

        init(count: Int, bunchSize: Int) throws {
            test = try MachineUnderTest(bunchSize: bunchSize)
            operations = (0..<count).map { _ in CallOperation(kind: "noop") }
            try test.enqueue(operations, now: 0)
            let spawned = test.takeSpawns()
            worker = try #require(spawned.first)
            others = Array(spawned.dropFirst())
            shared = try #require(test.machine.batch(of: worker))
            guard
                case .run(let first) = test.step(
                    worker, claimWake: true, limit: 16, batch: shared, claimed: &jobs)
            else { throw RelayError(.invalidArgument, "expected a job") }
            jobs.insert(first, at: 0)
            _ = test.takeActions()
        }

        func state(_ index: Int) -> CallStatus.State? {
            test.state(of: operations[index].id, now: 1)
        }

        /// Reports the batch as the worker does: `ran` operations ran and completed, the rest were given back.
        mutating func report(ran: Int) -> PipelineStateMachine.NextJob {
            let ends = jobs.enumerated().map { index, job in
                PipelineStateMachine.EndedAttempt(
                    slot: job.slot, end: index < ran ? .outcome(.completed(Data())) : .returned)
            }
            return test.step(worker, ended: ends, now: 1)
        }
    }

    @Test("S4: a worker's batch claims ready operations in start order, and never beyond the bunch size")
    func batchClaimsWithinTheBunch() throws {
        let batch = try Batch(count: 5, bunchSize: 3)
        #expect(batch.jobs.map(\.record.id) == batch.operations.prefix(3).map(\.id))
        #expect(batch.test.running == 3)
        #expect(batch.shared.mayRun(2))
        for index in 0..<3 { #expect(batch.state(index) == .running(attempt: 1)) }
        #expect(batch.state(3) == .pending(.ready))
    }

    @Test("S11: cancelling a claimed operation that has not begun ends it, and leaves the running one alone")
    func cancellingAClaimedOperation() throws {
        var batch = try Batch(count: 3, bunchSize: 4)
        #expect(try batch.test.cancel(batch.operations[2].id, now: 1))
        // The worker runs the first; the cancel stops the batch, without cancelling the worker's task.
        #expect(batch.test.takeActions().effects.signals.isEmpty)
        #expect(!batch.shared.mayRun(1))
        guard case .run(let next) = batch.report(ran: 1) else {
            Issue.record("expected the given-back operation to run next")
            return
        }
        #expect(batch.state(0) == .finished(.completed(Data())))
        #expect(batch.state(2) == .finished(.cancelled(.requested)))
        // The innocent one was given back with its attempt, and is the worker's next job, on attempt 1 again.
        #expect(next.record.id == batch.operations[1].id)
        #expect(next.attempt == 1)
    }

    @Test("S11: cancelling the claimed operation that a worker runs cancels the worker's task")
    func cancellingTheRunningClaimedOperation() throws {
        var batch = try Batch(count: 3, bunchSize: 4)
        #expect(batch.shared.mayRun(1))
        #expect(try batch.test.cancel(batch.operations[1].id, now: 1))
        // Nor does the worker start the third, and its next step, whatever it reports, is to exit.
        #expect(!batch.shared.mayRun(2))
        guard case .exit = batch.report(ran: 2) else {
            Issue.record("a cancelled worker takes nothing more")
            return
        }
    }

    /// Reports a batch that was interrupted while its first operation ran: the rest must have been given back, and
    /// wait as `waiting` says, their attempts unused.
    private func expectGivenBack(_ batch: inout Batch, waiting: CallStatus.Waiting) -> PipelineStateMachine.NextJob {
        #expect(!batch.shared.mayRun(1))
        _ = batch.test.takeActions()
        let next = batch.report(ran: 1)
        #expect(batch.state(0) == .finished(.completed(Data())))
        for index in 1..<batch.operations.count { #expect(batch.state(index) == .pending(waiting)) }
        #expect(batch.test.running == 0)
        let returned = batch.test.takeActions().records.filter {
            if case .attemptReturned(_, attempts: 0, sent: false) = $0.change { return true }
            return false
        }
        #expect(returned.count == batch.operations.count - 1)
        return next
    }

    @Test("S15: beginning to stop gives back the claimed operations that have not begun, their attempts unused")
    func stoppingGivesBackClaims() throws {
        var batch = try Batch(count: 3, bunchSize: 4)
        batch.test.machine.beginStop(deadline: 10, now: 1, into: &batch.test.actions)
        guard case .exit = expectGivenBack(&batch, waiting: .ready) else {
            Issue.record("a stopping pipeline gives its workers nothing more")
            return
        }
    }

    @Test("S9: suspending a sequence gives back the claimed operations of its workers that have not begun")
    func suspendingGivesBackClaims() throws {
        var batch = try Batch(count: 3, bunchSize: 4)
        _ = batch.test.machine.suspend(lane: batch.test.lane, reason: "test", now: 1, into: &batch.test.actions)
        guard case .park = expectGivenBack(&batch, waiting: .suspended) else {
            Issue.record("a suspended sequence gives its workers nothing more")
            return
        }
    }

    @Test("S9: a destination found offline by another worker stops the lane's batches from starting more")
    func goingOfflineInterruptsBatches() throws {
        var batch = try Batch(count: 3, bunchSize: 8)
        let other = CallOperation(kind: "noop")
        try batch.test.enqueue([other], now: 1)
        let worker = try #require(batch.others.first)
        guard case .run(let job) = batch.test.step(worker, claimWake: true, now: 1) else {
            Issue.record("expected the other worker to get the new operation")
            return
        }
        let offline = PipelineStateMachine.EndedAttempt(slot: job.slot, end: .outcome(.offline(reason: "unreachable")))
        #expect(batch.test.step(worker, ended: [offline], now: 2).parks)
        #expect(!batch.shared.mayRun(1))
        // The claimed operations go to the same destination: given back, they wait for it, unstarted.
        #expect(batch.report(ran: 1).parks)
        #expect(batch.state(1) == .pending(.offline("noop: unreachable, since 1970-01-01T00:00:00.000Z")))
    }

    @Test("S11: a worker cancelled through its signal, as when an attempt deadline passes, starts none of its claims")
    func cancelSignalGivesBackClaims() throws {
        var batch = try Batch(count: 3, bunchSize: 4)
        batch.test.machine.signalCancel(batch.worker, into: &batch.test.actions)
        // The batch stops with the signal, before the worker's task hears of it; the worker then retires.
        guard case .exit = expectGivenBack(&batch, waiting: .ready) else {
            Issue.record("a cancelled worker takes nothing more")
            return
        }
    }

    @Test("S4: lowering the bunch size gives back the claimed operations that have not begun")
    func loweringTheBunchGivesBackClaims() throws {
        var batch = try Batch(count: 4, bunchSize: 4)
        try batch.test.machine.setBunchSize(1, lane: .data, now: 1, into: &batch.test.actions)
        // The lane now has more workers than its bunch size, so this one retires.
        guard case .exit = expectGivenBack(&batch, waiting: .ready) else {
            Issue.record("expected the extra worker to retire")
            return
        }
    }
}

/// What subscribers hear of batches.
@Suite("Pipeline state machine: events of worker batches")
struct WorkerBatchEventTests {
    /// The started events among `events`: each operation's id and attempt, in order.
    private func starts(in events: [CallEvent]) -> [(id: UUID, attempt: Int, date: Date)] {
        events.compactMap { event in
            guard case .started(let attempt) = event.kind.value, let id = event.operationID else { return nil }
            return (id, attempt, event.date)
        }
    }

    @Test("S13: a started event means the executor ran the attempt; one given back from a batch has none")
    func startedOnlyWhenRun() throws {
        var test = try MachineUnderTest(bunchSize: 3)
        _ = try test.subscribe(MachineUnderTest.Subscriber(), to: nil)
        let operations = (0..<3).map { _ in CallOperation(kind: "noop") }
        try test.enqueue(operations, now: 0)
        let worker = try #require(test.takeSpawns().first)
        let shared = try #require(test.machine.batch(of: worker))
        var jobs: [PipelineStateMachine.Job] = []
        guard case .run(let first) = test.step(worker, claimWake: true, limit: 16, batch: shared, claimed: &jobs)
        else {
            Issue.record("expected a job")
            return
        }
        #expect(jobs.map(\.record.id) == [operations[1].id, operations[2].id])
        // Only the operation that runs at once is reported started at the claim.
        #expect(starts(in: test.takeActions().delivered).map(\.id) == [operations[0].id])

        // The worker ran the first two and gave the third back; the step claims the third again, alone.
        let ends: [PipelineStateMachine.EndedAttempt] = [
            .completed(first), .completed(jobs[0]), .init(slot: jobs[1].slot, end: .returned),
        ]
        #expect(test.step(worker, ended: ends, now: 5).slot == jobs[1].slot)
        let delivered = test.takeActions().delivered
        let started = starts(in: delivered)
        #expect(started.map(\.id) == [operations[1].id, operations[2].id])
        #expect(started.map(\.attempt) == [1, 1])
        // The batched start is dated at its claim, and comes before the end it precedes.
        #expect(started.first?.date == Date(timeIntervalSince1970: 0))
        let second = delivered.filter { $0.operationID == operations[1].id }.map(\.kind)
        #expect(second.first == .started(attempt: 1))
        #expect(second.count == 2)
    }
}
