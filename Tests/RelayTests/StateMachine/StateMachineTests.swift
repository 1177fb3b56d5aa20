import Foundation
import Testing

@testable import Relay

/// The state machine's scheduling, readiness and commits, driven by events; each test checks what the events return
/// and what they ask the shell to do, and reads the machine only through its queries.
@Suite("Pipeline state machine")
struct StateMachineTests {
    @Test("S4: the machine hands out ready operations one at a time within the bunch size, in call order")
    func handsOutInOrder() throws {
        var test = try MachineUnderTest()
        let operations = (0..<3).map { _ in CallOperation(kind: "noop") }
        try test.enqueue(operations, now: 0)
        let (worker, first) = try test.spawnAndStart()
        #expect(test.takeSpawns().isEmpty)
        #expect(first.record.id == operations[0].id)
        #expect(first.attempt == 1)
        // The bunch is full, so the worker's next step would park if the first had not finished.
        #expect(test.startNext(worker) == nil)
        #expect(test.startNext(worker, ended: [.completed(first)], now: 5) == operations[1].id)
    }

    @Test("S5: a dependent becomes ready exactly when its last dependency finishes")
    func readinessIsPushed() throws {
        var test = try MachineUnderTest(bunchSize: 4)
        let a = CallOperation(kind: "noop")
        let b = CallOperation(kind: "noop")
        let c = CallOperation(kind: "noop", dependencies: [a.id, b.id])
        try test.enqueue([a, b, c], now: 0)
        #expect(
            [a, b, c].map { test.state(of: $0.id) } == [.pending(.ready), .pending(.ready), .pending(.dependencies(2))])
        let workers = test.takeSpawns()
        #expect(workers.count == 2)
        guard case .run(let jobA) = test.step(workers[0], claimWake: true),
            case .run(let jobB) = test.step(workers[1], claimWake: true)
        else {
            Issue.record("expected two jobs")
            return
        }
        #expect(test.startNext(workers[0], ended: [.completed(jobA)], now: 1) == nil)
        #expect(test.state(of: c.id, now: 1) == .pending(.dependencies(1)))
        #expect(test.startNext(workers[1], ended: [.init(slot: jobB.slot, end: .outcome(.skipped))], now: 2) == c.id)
    }

    /// Enqueues `operations` on a lane of `bunchSize`, runs the first on the worker it spawns, then finishes it and
    /// returns the worker's next step.
    private func finishFirst(
        of operations: [CallOperation],
        bunchSize: Int
    ) throws -> (MachineUnderTest, PipelineStateMachine.NextJob) {
        var test = try MachineUnderTest(bunchSize: bunchSize)
        try test.enqueue(operations, now: 0)
        let worker = try #require(test.takeSpawns().first)
        guard case .run(let job) = test.step(worker, claimWake: true) else {
            throw RelayError(.invalidArgument, "expected a job")
        }
        _ = test.takeActions()
        let next = test.step(worker, ended: [.completed(job)], now: 1)
        return (test, next)
    }

    @Test("S5: the worker that finishes a dependency takes the dependent itself, and no other worker is woken for it")
    func finishingWorkerTakesTheDependent() throws {
        let a = CallOperation(kind: "noop")
        let b = CallOperation(kind: "noop", dependencies: [a.id])
        var (test, next) = try finishFirst(of: [a, b], bunchSize: 4)
        guard case .run(let job) = next else {
            Issue.record("expected the dependent")
            return
        }
        #expect(job.record.id == b.id)
        #expect(test.takeActions().effects.workerWakes.isEmpty)
        #expect(test.takeSpawns().isEmpty)
    }

    @Test("S4: work a finish leaves beyond the worker's next job still wakes other workers, within the bunch size")
    func finishStillDispatchesTheRest() throws {
        let root = CallOperation(kind: "noop")
        let children = (0..<5).map { _ in CallOperation(kind: "noop", dependencies: [root.id]) }
        var (test, next) = try finishFirst(of: [root] + children, bunchSize: 3)
        guard case .run = next else {
            Issue.record("expected a child")
            return
        }
        // One child runs here; the bunch of 3 leaves room for two more workers, asked for once.
        #expect(test.running == 1)
        #expect(test.takeSpawns().count == 2)
        #expect(test.takeSpawns().isEmpty)
    }

    @Test("S13: with no subscriber, no event is built or numbered")
    func noSubscriberNoEvents() throws {
        var test = try MachineUnderTest()
        let operation = CallOperation(kind: "noop")
        try test.enqueue([operation], now: 0)
        let (worker, job) = try test.spawnAndStart()
        #expect(test.takeActions().events.isEmpty)

        // The first event a subscriber sees is numbered one: nothing before it was.
        _ = try test.subscribe(MachineUnderTest.Subscriber(), to: nil)
        #expect(test.startNext(worker, ended: [.completed(job)], now: 1) == nil)
        let delivered = test.takeActions().delivered
        #expect(delivered.first?.sequenceNumber == 1)
        #expect(delivered.map(\.operationID).contains(operation.id))
    }

    @Test("S28: a fleet's suspension is announced once each way, and changes no count or record of this process")
    func fleetSuspensionAnnounced() throws {
        var test = try MachineUnderTest()
        _ = try test.subscribe(MachineUnderTest.Subscriber(), to: nil)
        _ = test.takeActions()
        let lane = test.lane
        for (previous, count) in [(0, 1), (1, 2), (2, 1), (1, 0), (0, 0)] {
            test.machine.announceSuspension(
                lane: lane, previous: previous, count: count, reason: "\(previous)→\(count)", now: 1,
                into: &test.actions)
        }
        let actions = test.takeActions()
        #expect(actions.delivered.map(\.kind) == [.suspended(reason: "0→1"), .resumed(reason: "1→0")])
        #expect(actions.delivered.allSatisfy { $0.sequenceName == .data })
        #expect(actions.records.isEmpty)
        #expect(test.machine.lanes[Int(lane)].suspensionCount == 0 && test.machine.suspensionCount == 0)
    }

    @Test(
        "S3: the look for sequences to supervise starts one, or parks until a registration wakes it; none is lost",
        .timeLimit(.minutes(3)))
    func supervisorsLook() async throws {
        var test = try MachineUnderTest()
        let late = try CallSequence(name: "late", bunchSize: 2)
        var answers: [String] = []
        var parked = 0
        // Three looks of the supervisors' loop, as the core takes them: the first starts `data`, the second parks
        // until `late` is registered, and the third starts `late`.
        for id in UInt64(1)...3 {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                switch test.machine.nextLaneToStart(parking: (id, continuation)) {
                case .start(let sequence, _):
                    answers.append(sequence.name.rawValue)
                    continuation.resume()
                case .stop:
                    answers.append("stop")
                    continuation.resume()
                case .wait:
                    parked += 1
                    test.machine.upsertLane(
                        late.name, sequence: late, bunchSize: 2, algorithm: .flat, addingSuspensions: 0, now: 1,
                        into: &test.actions)
                    let signals = test.takeActions().effects.signals
                    #expect(signals.count == 1, "the registration woke \(signals.count) looks")
                    // Resuming more than once traps; resuming none leaves the test waiting, which its limit reports.
                    signals.first?.resume()
                }
            }
        }
        #expect(answers == ["data", "late"])
        #expect(parked == 1)
        #expect(test.machine.lanes.allSatisfy { $0.supervisorStarted })
    }

    @Test("S2: a rejected commit leaves the table, index and records as they were")
    func rejectedCommitRollsBack() throws {
        var test = try MachineUnderTest()
        try test.enqueue([CallOperation(kind: "noop")], now: 0)
        _ = test.takeActions()
        let a = UUID()
        #expect(throws: RelayError.self) {
            try test.enqueue(
                [CallOperation(id: a, kind: "noop"), CallOperation(kind: "noop", dependencies: [UUID()])],
                now: 0
            )
        }
        #expect(test.lookup(a) == nil)
        let actions = test.takeActions()
        #expect(actions.records.isEmpty)
        #expect(actions.effects.isEmpty)
        #expect(test.takeSpawns().count == 1)
        // The next commit takes the next snapshot number, and the slots the rejected commit took.
        let next = [CallOperation(kind: "noop"), CallOperation(kind: "noop")]
        try test.enqueue(next, now: 0)
        let records = test.takeActions().records
        #expect(records.first?.kind == .commit)
        #expect(records.first?.snapshot == 2)
        #expect(Set(next.compactMap { test.lookup($0.id) }) == [1, 2])
    }

    @Test("S5: a dependent cancelled before its dependency ends is forgotten after it; no other operation stands in")
    func cancelledDependentOutlivesItsDependency() throws {
        var test = try MachineUnderTest()
        let first = CallOperation(kind: "noop")
        let dependent = CallOperation(kind: "noop", dependencies: [first.id])
        try test.enqueue([first, dependent], now: 0)
        let (worker, job) = try test.spawnAndStart()
        #expect(try test.cancel(dependent.id, now: 1))

        // Its window has passed, but the running dependency still lists it: it stays, and its slot stays its own.
        test.forgetExpired(now: 10_000_000_000)
        #expect(test.lookup(dependent.id) != nil)
        #expect(test.dependents(of: first.id) == [dependent.id])
        let later = CallOperation(kind: "noop")
        try test.enqueue([later], now: 10_000_000_000)
        let laterSlot = try #require(test.lookup(later.id))
        #expect(test.lookup(dependent.id) != laterSlot)

        // The dependency's end touches only the cancelled dependent, which is then forgotten like any other.
        #expect(test.startNext(worker, ended: [.completed(job)], now: 10_000_000_001) == later.id)
        test.forgetExpired(now: 20_000_000_000)
        #expect(test.lookup(dependent.id) == nil)
        #expect(test.lookup(first.id) == nil)
        #expect(test.state(of: later.id, now: 20_000_000_000) == .running(attempt: 1))
    }

    @Test("S5/S16: a dependency forgotten before its dependent is committed is an unknown dependency; nothing waits")
    func dependencyForgottenBeforeCommit() throws {
        var test = try MachineUnderTest(retention: 0)
        let dependency = CallOperation(kind: "noop")
        try test.enqueue([dependency], now: 0)
        let (worker, job) = try test.spawnAndStart()
        #expect(test.step(worker, ended: [.completed(job)], now: 1).parks)
        // The timer loop's sweep, a transition that holds the directory, vacates the dependency.
        test.forgetExpired(now: Retention.sweepGap)

        let dependent = CallOperation(kind: "noop", dependencies: [dependency.id])
        let error = #expect(throws: RelayError.self) { try test.enqueue([dependent], now: 2) }
        #expect(error?.code == .unknownDependency)
        #expect(test.lookup(dependent.id) == nil)
    }

    @Test("S5/S16: until its id leaves the directory, a forgotten dependency still satisfies a new dependent")
    func dependencyForgottenButKnown() throws {
        var test = try MachineUnderTest(retention: 0)
        let dependency = CallOperation(kind: "noop")
        try test.enqueue([dependency], now: 0)
        let (worker, job) = try test.spawnAndStart()
        #expect(test.step(worker, ended: [.completed(job)], now: 1).parks)

        // The commit admits the dependent against the directory, which still names the completed dependency; the
        // commit's transition then lets the dependency go.
        let dependent = CallOperation(kind: "noop", dependencies: [dependency.id])
        try test.enqueue([dependent], now: 2)
        #expect(test.state(of: dependent.id) == .pending(.ready))
        #expect(test.lookup(dependency.id) == nil)
        #expect(test.takeActions().effects.released.map(\.id) == [dependency.id])
    }

    @Test("S16: an operation that takes a forgotten operation's slot starts afresh, with nothing of the old one")
    func reusedSlotStartsAfresh() throws {
        var test = try MachineUnderTest()
        let old = CallOperation(kind: "noop")
        try test.enqueue([old], now: 0)
        let (worker, job) = try test.spawnAndStart()
        // The old operation ran once, waits for a retry and a hold, then is cancelled and forgotten.
        let retry = PipelineStateMachine.EndedAttempt(
            slot: job.slot, end: .outcome(.retry(after: .seconds(100), reason: "busy")))
        #expect(test.startNext(worker, ended: [retry], now: 7) == nil)
        try test.hold(old.id, until: 200_000_000_000, context: "later", now: 8)
        #expect(try test.cancel(old.id, now: 9))
        let more1 = test.forgetExpired(now: 2_000_000_000)
        #expect(!more1)
        #expect(test.lookup(old.id) == nil)

        let new = CallOperation(kind: "noop")
        try test.enqueue([new], now: 3_000_000_000)
        #expect(test.lookup(new.id) == job.slot)
        #expect(test.holds(of: new.id) == [:])
        let status = try #require(test.status(of: new.id, now: 3_000_000_000))
        #expect(status.state == .pending(.ready))
        #expect(status.attempts == 0)
        #expect(status.metrics.startedAt == nil)
        #expect(status.metrics.finishedAt == nil)
        #expect(status.metrics.runTime == .zero)
        #expect(status.metrics.enqueuedAt == Date(timeIntervalSince1970: 3))
        guard case .run(let next) = test.step(worker, now: 3_000_000_000) else {
            Issue.record("expected the new operation to start at once")
            return
        }
        #expect(next.record.id == new.id)
        #expect(next.attempt == 1)
    }

    @Test("S16: with no retention, every finished operation leaves the directory with no commit after it")
    func zeroRetentionEmptiesTheDirectory() async throws {
        let configuration = DataPoint.Configuration(retention: .zero, shutdownGracePeriod: .zero)
        try await withManualPoint(configuration: configuration) { point, clock in
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
            let operations = (0..<500).map { _ in CallOperation(kind: .noop) }
            let handles = try await point.enqueue(operations)
            for handle in handles { #expect(try await handle.outcome == .completed(Data())) }
            // The timer loop's sweep vacates them, a gap after the last; idle() waits for a sweep that is due.
            clock.advance(by: .seconds(1))
            try await point.idle()
            #expect(try await point.states(of: operations.map(\.id)).allSatisfy { $0 == nil })
            #expect(point.metrics().total.completed == 500)
        }
    }
}
