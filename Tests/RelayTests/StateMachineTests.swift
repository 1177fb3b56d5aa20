import Foundation
import RelayTesting
import Testing

@testable import Relay

/// Synchronous tests of the pure parts: the pipeline's state machine and its data structures.
@Suite("Pipeline state machine")
struct StateMachineTests {
    private struct Noop: CallExecutor {
        func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
            .completed(Data())
        }
    }

    private func machine(retention: Int64 = 1_000_000_000) throws -> (PipelineStateMachine, Int32) {
        var machine = PipelineStateMachine(
            origin: Date(timeIntervalSince1970: 0),
            limits: .init(retention: retention, maximumPayloadSize: 1 << 20, metricsWindow: 100)
        )
        machine.register(Noop(), for: "noop", now: 0)
        machine.upsertLane(
            .data,
            sequence: try CallSequence(name: .data),
            bunchSize: 1,
            algorithm: .flat,
            addingSuspensions: 0,
            now: 0
        )
        try machine.start(now: 0)
        return (machine, try #require(machine.laneIndex[.data]))
    }

    /// Spawns the worker the lane asked for and starts the first ready operation on it, at time zero.
    private func spawnAndStart(
        _ machine: inout PipelineStateMachine,
        lane: Int32
    ) throws -> (worker: UInt64, job: PipelineStateMachine.Job) {
        let spawned = machine.takeSpawn(lane: lane)
        let worker = try #require(spawned)
        let next = machine.nextJob(lane: lane, worker: worker, claimWake: true, cancelled: false, now: 0)
        guard case .run(let job) = next else { throw RelayError(.invalidArgument, "expected a job") }
        return (worker, job)
    }

    private func startNext(_ machine: inout PipelineStateMachine, lane: Int32, worker: UInt64) -> UUID? {
        guard
            case .run(let job) = machine.nextJob(lane: lane, worker: worker, claimWake: false, cancelled: false, now: 0)
        else { return nil }
        return job.record.id
    }

    @Test("S4: the machine hands out ready operations one at a time within the bunch size, in call order")
    func handsOutInOrder() throws {
        var (machine, lane) = try self.machine()
        let operations = (0..<3).map { _ in CallOperation(kind: "noop") }
        try machine.enqueue(operations, now: 0)
        #expect(machine.lanes[Int(lane)].pendingSpawns == 1)
        let (worker, first) = try spawnAndStart(&machine, lane: lane)
        #expect(first.record.id == operations[0].id)
        #expect(first.attempt == 1)
        // The bunch is full, so a second worker would park.
        #expect(startNext(&machine, lane: lane, worker: worker) == nil)
        machine.finish(first.slot, worker: worker, end: .outcome(.completed(Data())), now: 5)
        #expect(startNext(&machine, lane: lane, worker: worker) == operations[1].id)
    }

    @Test("S5: a dependent becomes ready exactly when its last dependency finishes")
    func readinessIsPushed() throws {
        var (machine, lane) = try self.machine()
        try machine.upsertLane(
            .data, sequence: CallSequence(name: .data), bunchSize: 4, algorithm: .flat, addingSuspensions: 0, now: 0)
        let a = CallOperation(kind: "noop")
        let b = CallOperation(kind: "noop")
        let c = CallOperation(kind: "noop", dependencies: [a.id, b.id])
        try machine.enqueue([a, b, c], now: 0)
        #expect(machine.lanes[Int(lane)].readyCount == 2)
        let worker: UInt64 = 99
        machine.workers[worker] = WorkerState(lane: lane)
        guard
            case .run(let jobA) = machine.nextJob(
                lane: lane, worker: worker, claimWake: false, cancelled: false, now: 0),
            case .run(let jobB) = machine.nextJob(
                lane: lane, worker: worker, claimWake: false, cancelled: false, now: 0)
        else {
            Issue.record("expected two jobs")
            return
        }
        machine.finish(jobA.slot, worker: worker, end: .outcome(.completed(Data())), now: 1)
        #expect(machine.lanes[Int(lane)].readyCount == 0)
        #expect(machine.status(of: c.id, now: 1)?.state == .pending(.dependencies(1)))
        machine.finish(jobB.slot, worker: worker, end: .outcome(.skipped), now: 2)
        #expect(machine.lanes[Int(lane)].readyCount == 1)
        #expect(machine.status(of: c.id, now: 2)?.state == .pending(.ready))
    }

    /// Enqueues `operations` on a lane of `bunchSize`, runs the first on the worker it spawns, then finishes it and
    /// returns the worker's next step.
    private func finishFirst(
        of operations: [CallOperation],
        bunchSize: Int
    ) throws -> (PipelineStateMachine, Int32, PipelineStateMachine.NextJob) {
        var (machine, lane) = try self.machine()
        try machine.upsertLane(
            .data, sequence: CallSequence(name: .data), bunchSize: bunchSize, algorithm: .flat, addingSuspensions: 0,
            now: 0)
        try machine.enqueue(operations, now: 0)
        let spawned = machine.takeSpawn(lane: lane)
        let worker = try #require(spawned)
        let first = machine.nextJob(lane: lane, worker: worker, claimWake: true, cancelled: false, now: 0)
        guard case .run(let job) = first else { throw RelayError(.invalidArgument, "expected a job") }
        let next = machine.finish(
            [.init(slot: job.slot, end: .outcome(.completed(Data())))], worker: worker, thenNextJobIn: lane,
            claimWake: false,
            cancelled: false, now: 1)
        return (machine, lane, next)
    }

    @Test("S5: the worker that finishes a dependency takes the dependent itself, and no other worker is woken for it")
    func finishingWorkerTakesTheDependent() throws {
        let a = CallOperation(kind: "noop")
        let b = CallOperation(kind: "noop", dependencies: [a.id])
        let (machine, lane, next) = try finishFirst(of: [a, b], bunchSize: 4)
        guard case .run(let job) = next else {
            Issue.record("expected the dependent")
            return
        }
        #expect(job.record.id == b.id)
        #expect(machine.lanes[Int(lane)].workers == 1)
        #expect(machine.lanes[Int(lane)].pendingSpawns == 0)
        #expect(machine.lanes[Int(lane)].wakesInFlight == 0)
        #expect(machine.effects.workerWakes.isEmpty)
    }

    @Test("S4: work a finish leaves beyond the worker's next job still wakes other workers, within the bunch size")
    func finishStillDispatchesTheRest() throws {
        let root = CallOperation(kind: "noop")
        let children = (0..<5).map { _ in CallOperation(kind: "noop", dependencies: [root.id]) }
        let (machine, lane, next) = try finishFirst(of: [root] + children, bunchSize: 3)
        guard case .run = next else {
            Issue.record("expected a child")
            return
        }
        // One child runs here; the bunch of 3 leaves room for two more workers, asked for once.
        #expect(machine.lanes[Int(lane)].running == 1)
        #expect(machine.lanes[Int(lane)].pendingSpawns == 2)
        #expect(machine.lanes[Int(lane)].workers == 3)
    }

    @Test("S13: with no subscriber, no event is built or numbered")
    func noSubscriberNoEvents() throws {
        var (machine, lane) = try self.machine()
        try machine.enqueue([CallOperation(kind: "noop")], now: 0)
        machine.workers[1] = WorkerState(lane: lane)
        _ = startNext(&machine, lane: lane, worker: 1)
        #expect(machine.hub.nextSequenceNumber == 1)
        #expect(machine.hub.takeSteps().isEmpty)
    }

    @Test("S2: a rejected commit leaves the table, index and records as they were")
    func rejectedCommitRollsBack() throws {
        var (machine, _) = try self.machine()
        try machine.enqueue([CallOperation(kind: "noop")], now: 0)
        machine.records.removeAll()
        let slotsBefore = machine.slots.count
        let a = UUID()
        #expect(throws: RelayError.self) {
            try machine.enqueue(
                [CallOperation(id: a, kind: "noop"), CallOperation(kind: "noop", dependencies: [UUID()])],
                now: 0
            )
        }
        #expect(machine.lookup(a) == nil)
        #expect(machine.directory.count == 1)
        #expect(machine.records.isEmpty)
        #expect(machine.lastSnapshot == 1)
        // Slots taken by the rejected commit are free for the next one.
        try machine.enqueue([CallOperation(kind: "noop"), CallOperation(kind: "noop")], now: 0)
        #expect(machine.slots.count == slotsBefore + 2)
    }

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

    @Test("S16: past the retention window a finished operation is forgotten, and its record leaves with the effects")
    func evictionHandsRecordsOut() throws {
        var (machine, lane) = try self.machine()
        let finished = CallOperation(kind: "noop")
        weak let record = try machine.enqueue([finished], now: 0).first
        do {
            let (worker, job) = try spawnAndStart(&machine, lane: lane)
            machine.finish(job.slot, worker: worker, end: .outcome(.completed(Data())), now: 5)
        }
        _ = machine.takeEffects()
        #expect(machine.lookup(finished.id) != nil)

        // The retention window is one second: eviction before it keeps the finished operation, and after it,
        // forgets it.
        var more = machine.evictExpired(now: 500_000_000)
        #expect(!more)
        #expect(machine.lookup(finished.id) != nil)
        more = machine.evictExpired(now: 2_000_000_000)
        #expect(!more)
        #expect(machine.lookup(finished.id) == nil)
        var effects = machine.takeEffects()
        #expect(effects.released.map(\.id) == [finished.id])
        #expect(record != nil)
        effects.released.removeAll()
        #expect(record == nil)
    }

    @Test("S16: with a window of zero, a worker forgets what it finishes, its id and its record, in that transition")
    func zeroWindowForgetsAtFinish() throws {
        var (machine, lane) = try self.machine(retention: 0)
        let first = CallOperation(kind: "noop")
        let dependent = CallOperation(kind: "noop", dependencies: [first.id])
        weak let record = try machine.enqueue([first, dependent], now: 0).first
        let worker: UInt64
        let slot: Int32
        do {
            // Scoped, so that the job lets go of the record.
            let started = try spawnAndStart(&machine, lane: lane)
            (worker, slot) = (started.worker, started.job.slot)
        }
        // Cancelled while its dependency runs, the dependent stays: the dependency still lists it.
        #expect(try machine.cancel(dependent.id, now: 1))
        #expect(machine.lookup(dependent.id) != nil)
        _ = machine.takeEffects()

        // The dependency's end forgets both, ids and slots, and hands their records out with the effects.
        machine.finish(slot, worker: worker, end: .outcome(.completed(Data())), now: 2)
        #expect(machine.slots[Int(slot)].phase == .free)
        #expect(machine.lookup(first.id) == nil)
        #expect(machine.lookup(dependent.id) == nil)
        do {
            let effects = machine.takeEffects()
            #expect(Set(effects.released.map(\.id)) == [first.id, dependent.id])
            effects.perform()
            #expect(record?.settled != nil)
        }
        #expect(record == nil)
    }

    @Test("S5/S16: a dependency forgotten before its dependent is committed is an unknown dependency; nothing waits")
    func dependencyForgottenBeforeCommit() throws {
        var (machine, lane) = try self.machine(retention: 0)
        let dependency = CallOperation(kind: "noop")
        try machine.enqueue([dependency], now: 0)
        let (worker, job) = try spawnAndStart(&machine, lane: lane)
        machine.finish(job.slot, worker: worker, end: .outcome(.completed(Data())), now: 1)

        let dependent = CallOperation(kind: "noop", dependencies: [dependency.id])
        let error = #expect(throws: RelayError.self) { try machine.enqueue([dependent], now: 2) }
        #expect(error?.code == .unknownDependency)
        #expect(machine.lookup(dependent.id) == nil)
    }

    @Test("S16: the first finished operation arms the timer for its window's end; sweeps come when due, a gap apart")
    func retentionArmsTheTimer() throws {
        var (machine, _) = try self.machine()
        let operations = (0..<2).map { _ in CallOperation(kind: "noop") }
        try machine.enqueue(operations, now: 0)
        #expect(machine.timerPlan() == .wait(generation: machine.timerGeneration))

        // The retention window is one second. The first operation to finish rearms the timer; the second, whose
        // window ends later, does not.
        let before = machine.timerGeneration
        _ = try machine.cancel(operations[0].id, now: 0)
        #expect(machine.timerGeneration == before + 1)
        #expect(machine.timerPlan() == .sleep(until: 1_000_000_000, generation: machine.timerGeneration))
        _ = try machine.cancel(operations[1].id, now: 500_000_000)
        #expect(machine.timerGeneration == before + 1)
        // A wake before the sweep is due, such as that rearm, forgets nothing.
        var due = machine.fireTimers(now: 500_000_000)
        #expect(!due)
        due = machine.fireTimers(now: 1_000_000_000)
        #expect(due)

        // A sweep at the first window's end forgets only the first; the next comes a gap later, not at the second
        // window's end, half a second on.
        var more = machine.evictExpired(now: 1_000_000_000)
        #expect(!more)
        #expect(operations.map { machine.lookup($0.id) == nil } == [true, false])
        #expect(machine.timerPlan() == .sleep(until: 2_000_000_000, generation: machine.timerGeneration))
        more = machine.evictExpired(now: 2_000_000_000)
        #expect(!more)
        #expect(machine.lookup(operations[1].id) == nil)
        #expect(machine.timerPlan() == .wait(generation: machine.timerGeneration))
    }

    @Test("S5: a dependent cancelled before its dependency ends is forgotten after it; no other operation stands in")
    func cancelledDependentOutlivesItsDependency() throws {
        var (machine, lane) = try self.machine()
        let first = CallOperation(kind: "noop")
        let dependent = CallOperation(kind: "noop", dependencies: [first.id])
        try machine.enqueue([first, dependent], now: 0)
        let (worker, job) = try spawnAndStart(&machine, lane: lane)
        let cancelled = try machine.cancel(dependent.id, now: 1)
        #expect(cancelled)

        // Its window has passed, but the running dependency still lists it: it stays, and its slot stays its own.
        machine.evictExpired(now: 10_000_000_000)
        #expect(machine.lookup(dependent.id) != nil)
        #expect(machine.dependents(of: first.id) == [dependent.id])
        let later = CallOperation(kind: "noop")
        try machine.enqueue([later], now: 10_000_000_000)
        let laterSlot = try #require(machine.lookup(later.id))
        #expect(machine.lookup(dependent.id) != laterSlot)

        // The dependency's end touches only the cancelled dependent, which is then forgotten like any other.
        machine.finish(job.slot, worker: worker, end: .outcome(.completed(Data())), now: 10_000_000_001)
        #expect(machine.slots[Int(laterSlot)].unfinishedDependencies == 0)
        #expect(machine.status(of: later.id, now: 10_000_000_001)?.state == .pending(.ready))
        machine.evictExpired(now: 20_000_000_000)
        #expect(machine.lookup(dependent.id) == nil)
        #expect(machine.lookup(first.id) == nil)
    }

    @Test("S16: eviction forgets at most its limit at a time, oldest first, and tells whether more remain")
    func evictionInSteps() throws {
        var (machine, _) = try self.machine()
        let operations = (0..<3).map { _ in CallOperation(kind: "noop") }
        try machine.enqueue(operations, now: 0)
        for (offset, operation) in operations.enumerated() {
            let cancelled = try machine.cancel(operation.id, now: Int64(offset))
            #expect(cancelled)
        }
        _ = machine.takeEffects()

        var more = machine.evictExpired(now: 2_000_000_000, limit: 2)
        #expect(more)
        #expect(operations.map { machine.lookup($0.id) == nil } == [true, true, false])
        more = machine.evictExpired(now: 2_000_000_000, limit: 2)
        #expect(!more)
        #expect(machine.lookup(operations[2].id) == nil)
        let effects = machine.takeEffects()
        #expect(effects.released.map(\.id) == operations.map(\.id))
    }

    @Test("S16: an operation that takes a forgotten operation's slot starts afresh, with nothing of the old one")
    func reusedSlotStartsAfresh() throws {
        var (machine, lane) = try self.machine()
        let old = CallOperation(kind: "noop")
        try machine.enqueue([old], now: 0)
        let (worker, job) = try spawnAndStart(&machine, lane: lane)
        // The old operation ran once, waits for a retry and a hold, then is cancelled and forgotten.
        machine.finish(job.slot, worker: worker, end: .outcome(.retry(after: .seconds(100), reason: "busy")), now: 7)
        try machine.hold(old.id, until: 200_000_000_000, context: "later", now: 8)
        let cancelled = try machine.cancel(old.id, now: 9)
        #expect(cancelled)
        let more = machine.evictExpired(now: 2_000_000_000)
        #expect(!more)
        #expect(machine.lookup(old.id) == nil)

        let new = CallOperation(kind: "noop")
        try machine.enqueue([new], now: 3_000_000_000)
        #expect(machine.lookup(new.id) == job.slot)
        let status = try #require(machine.status(of: new.id, now: 3_000_000_000))
        #expect(status.state == .pending(.ready))
        #expect(status.attempts == 0)
        #expect(status.metrics.startedAt == nil)
        #expect(status.metrics.finishedAt == nil)
        #expect(status.metrics.runTime == .zero)
        #expect(status.metrics.enqueuedAt == Date(timeIntervalSince1970: 3))
        guard
            case .run(let next) = machine.nextJob(
                lane: lane, worker: worker, claimWake: false, cancelled: false, now: 3_000_000_000)
        else {
            Issue.record("expected the new operation to start at once")
            return
        }
        #expect(next.record.id == new.id)
        #expect(next.attempt == 1)
    }

    /// A worker of a lane of `bunchSize` that ran the first of `count` operations and claimed the rest it may.
    private struct Batch {
        var machine: PipelineStateMachine
        let operations: [CallOperation]
        let worker: UInt64
        let lane: Int32
        /// The batch the worker's state holds, as the worker's loop gets it.
        let shared: WorkerBatch
        var jobs: [PipelineStateMachine.Job] = []

        init(_ tests: StateMachineTests, count: Int, bunchSize: Int) throws {
            var (machine, lane) = try tests.machine()
            try machine.upsertLane(
                .data, sequence: CallSequence(name: .data), bunchSize: bunchSize, algorithm: .flat,
                addingSuspensions: 0, now: 0)
            operations = (0..<count).map { _ in CallOperation(kind: "noop") }
            try machine.enqueue(operations, now: 0)
            let spawned = machine.takeSpawn(lane: lane)
            worker = try #require(spawned)
            let state = try #require(machine.workers[worker])
            shared = state.batch
            guard
                case .run(let first) = machine.nextJob(
                    lane: lane, worker: worker, claimWake: true, cancelled: false, now: 0)
            else { throw RelayError(.invalidArgument, "expected a job") }
            jobs = [first]
            machine.claimMore(
                after: first.slot, lane: lane, worker: worker, batch: shared, limit: 15, now: 0, into: &jobs)
            self.machine = machine
            self.lane = lane
        }

        func state(_ index: Int) -> CallStatus.State? {
            machine.status(of: operations[index].id, now: 1)?.state
        }

        /// Reports the batch as the worker does: `ran` operations ran and completed, the rest were given back.
        mutating func report(ran: Int) -> PipelineStateMachine.NextJob {
            let ends = jobs.enumerated().map { index, job in
                PipelineStateMachine.EndedAttempt(
                    slot: job.slot, end: index < ran ? .outcome(.completed(Data())) : .returned)
            }
            return machine.finish(
                ends, worker: worker, thenNextJobIn: lane, claimWake: false, cancelled: false, now: 1)
        }
    }

    @Test("S4: a worker's batch claims ready operations in start order, and never beyond the bunch size")
    func batchClaimsWithinTheBunch() throws {
        let batch = try Batch(self, count: 5, bunchSize: 3)
        #expect(batch.jobs.map(\.record.id) == batch.operations.prefix(3).map(\.id))
        #expect(batch.machine.lanes[Int(batch.lane)].running == 3)
        #expect(batch.jobs.map { batch.machine.slots[Int($0.slot)].batchIndex } == [0, 1, 2])
        for index in 0..<3 { #expect(batch.state(index) == .running(attempt: 1)) }
        #expect(batch.state(3) == .pending(.ready))
    }

    @Test("S11: cancelling a claimed operation that has not begun ends it, and leaves the running one alone")
    func cancellingAClaimedOperation() throws {
        var batch = try Batch(self, count: 3, bunchSize: 4)
        #expect(try batch.machine.cancel(batch.operations[2].id, now: 1))
        // The worker runs the first; the cancel asks it to stop the batch, without cancelling its task.
        #expect(batch.machine.workers[batch.worker]?.doomed == false)
        #expect(batch.machine.effects.signals.isEmpty)
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
        var batch = try Batch(self, count: 3, bunchSize: 4)
        #expect(batch.shared.mayRun(1))
        #expect(try batch.machine.cancel(batch.operations[1].id, now: 1))
        #expect(batch.machine.workers[batch.worker]?.doomed == true)
        // Nor does the worker start the third.
        #expect(!batch.shared.mayRun(2))
    }

    /// Reports a batch that was interrupted while its first operation ran: the rest must have been given back, and
    /// wait as `waiting` says, their attempts unused.
    private func expectGivenBack(_ batch: inout Batch, waiting: CallStatus.Waiting) -> PipelineStateMachine.NextJob {
        #expect(!batch.shared.mayRun(1))
        let next = batch.report(ran: 1)
        #expect(batch.state(0) == .finished(.completed(Data())))
        for index in 1..<batch.operations.count { #expect(batch.state(index) == .pending(waiting)) }
        #expect(batch.machine.lanes[Int(batch.lane)].running == 0)
        let returned = batch.machine.records.filter {
            if case .attemptReturned(_, attempts: 0) = $0 { return true }
            return false
        }
        #expect(returned.count == batch.operations.count - 1)
        return next
    }

    @Test("S15: beginning to stop gives back the claimed operations that have not begun, their attempts unused")
    func stoppingGivesBackClaims() throws {
        var batch = try Batch(self, count: 3, bunchSize: 4)
        batch.machine.beginStop(deadline: 10, now: 1)
        guard case .exit = expectGivenBack(&batch, waiting: .ready) else {
            Issue.record("a stopping pipeline gives its workers nothing more")
            return
        }
    }

    @Test("S9: suspending a sequence gives back the claimed operations of its workers that have not begun")
    func suspendingGivesBackClaims() throws {
        var batch = try Batch(self, count: 3, bunchSize: 4)
        _ = batch.machine.suspend(lane: batch.lane, reason: "test", now: 1)
        guard case .park = expectGivenBack(&batch, waiting: .suspended) else {
            Issue.record("a suspended sequence gives its workers nothing more")
            return
        }
    }

    @Test("S9: a destination found offline by another worker stops the lane's batches from starting more")
    func goingOfflineInterruptsBatches() throws {
        var batch = try Batch(self, count: 3, bunchSize: 8)
        let other = CallOperation(kind: "noop")
        try batch.machine.enqueue([other], now: 1)
        let worker: UInt64 = 99
        batch.machine.workers[worker] = WorkerState(lane: batch.lane)
        guard
            case .run(let job) = batch.machine.nextJob(
                lane: batch.lane, worker: worker, claimWake: false, cancelled: false, now: 1)
        else {
            Issue.record("expected the other worker to get the new operation")
            return
        }
        batch.machine.finish(job.slot, worker: worker, end: .outcome(.offline(reason: "unreachable")), now: 2)
        #expect(!batch.shared.mayRun(1))
    }

    @Test("S11: a worker cancelled through its signal, as when an attempt deadline passes, starts none of its claims")
    func cancelSignalGivesBackClaims() throws {
        var batch = try Batch(self, count: 3, bunchSize: 4)
        batch.machine.signalCancel(batch.worker)
        // The batch stops with the signal, before the worker's task hears of it; the worker then retires.
        guard case .exit = expectGivenBack(&batch, waiting: .ready) else {
            Issue.record("a cancelled worker takes nothing more")
            return
        }
    }

    @Test("S4: lowering the bunch size gives back the claimed operations that have not begun")
    func loweringTheBunchGivesBackClaims() throws {
        var batch = try Batch(self, count: 4, bunchSize: 4)
        try batch.machine.setBunchSize(1, lane: .data, now: 1)
        // The lane now has more workers than its bunch size, so this one retires.
        guard case .exit = expectGivenBack(&batch, waiting: .ready) else {
            Issue.record("expected the extra worker to retire")
            return
        }
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

    @Test("S16: with no retention, every finished operation leaves the directory with no commit after it")
    func zeroRetentionEmptiesTheDirectory() async throws {
        let configuration = DataPoint.Configuration(retention: .zero, shutdownGracePeriod: .zero)
        try await withManualPoint(configuration: configuration) { point, _ in
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
            let handles = try await point.enqueue((0..<500).map { _ in CallOperation(kind: .noop) })
            for handle in handles { #expect(try await handle.outcome == .completed(Data())) }
            await point.idle()
            #expect(point.core.read { $0.directory.count } == 0)
            #expect(point.metrics().total.completed == 500)
        }
    }
}
