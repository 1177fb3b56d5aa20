import Foundation
import RelayTesting
import Testing

@testable import Relay

/// A state machine with one lane, `data`, and an executor for `noop` that completes, started at time zero; the tests
/// drive it with events and check what each returns and what it asks the shell to do.
struct MachineUnderTest {
    /// What the events since the last call asked the shell to do, taken as the core takes it after a transition.
    struct Actions {
        var records: [StorageRecord]
        var events: [EventOutbox.Step]
        var effects: PipelineActions

        /// The events delivered to subscribers, in order.
        var delivered: [CallEvent] {
            events.flatMap { step -> [CallEvent] in
                guard case .deliver(_, let events) = step else { return [] }
                return events
            }
        }
    }

    struct Noop: CallExecutor {
        func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
            .completed(Data())
        }
    }

    /// A sink whose deliveries the tests read from the actions.
    final class Subscriber: EventSink {
        func receive(_ events: [CallEvent]) -> EventDelivery { EventDelivery(needsWake: false, dropped: 0) }
        func close() -> Bool { false }
        func wake() {}
    }

    var machine: PipelineStateMachine
    /// What the events since the last ``takeActions()`` asked for, as the core gathers one event's.
    var actions = PipelineActions()
    /// The directory of ids, which the core keeps under a lock of its own.
    var directory = OperationDirectory()
    let lane: Int32

    init(retention: Int64 = 1_000_000_000, bunchSize: Int = 1, sharing: Bool = false) throws {
        machine = PipelineStateMachine(
            origin: Date(timeIntervalSince1970: 0),
            limits: .init(retention: .window(.nanoseconds(retention)), maximumPayloadSize: 1 << 20, metricsWindow: 100),
            sharing: sharing
        )
        machine.register(Noop(), for: "noop", now: 0, into: &actions)
        machine.upsertLane(
            .data, sequence: try CallSequence(name: .data), bunchSize: bunchSize, algorithm: .flat,
            addingSuspensions: 0, now: 0, into: &actions)
        try machine.start(now: 0, into: &actions)
        lane = try machine.registeredLane(.data)
        _ = takeActions()
    }

    /// Ends the events since the last call as the core ends each one, and takes what they asked for.
    mutating func takeActions() -> Actions {
        machine.finish(&actions, now: 0)
        defer { actions = PipelineActions() }
        return Actions(records: actions.records, events: actions.events.steps, effects: actions)
    }

    /// Takes every worker the lane asked for since the last call.
    mutating func takeSpawns() -> [UInt64] {
        var spawned: [UInt64] = []
        while let worker = machine.takeSpawn(lane: lane) { spawned.append(worker) }
        return spawned
    }

    /// A worker's step as its loop takes it, claiming up to `limit` operations.
    mutating func step(
        _ worker: UInt64,
        ended: [PipelineStateMachine.EndedAttempt] = [],
        claimWake: Bool = false,
        cancelled: Bool = false,
        limit: Int = 1,
        batch: WorkerBatch = WorkerBatch(),
        claimed: inout [PipelineStateMachine.Job],
        now: Int64 = 0
    ) -> PipelineStateMachine.NextJob {
        machine.workerStep(
            worker, lane: lane, ended: ended, claimWake: claimWake, cancelled: cancelled, limit: limit, batch: batch,
            claimed: &claimed, now: now, into: &actions)
    }

    /// A worker's step that claims nothing more than its next job.
    mutating func step(
        _ worker: UInt64,
        ended: [PipelineStateMachine.EndedAttempt] = [],
        claimWake: Bool = false,
        now: Int64 = 0
    ) -> PipelineStateMachine.NextJob {
        var claimed: [PipelineStateMachine.Job] = []
        return step(worker, ended: ended, claimWake: claimWake, claimed: &claimed, now: now)
    }

    /// Spawns the worker the lane asked for and starts the first ready operation on it, at time zero.
    mutating func spawnAndStart() throws -> (worker: UInt64, job: PipelineStateMachine.Job) {
        let worker = try #require(takeSpawns().first)
        guard case .run(let job) = step(worker, claimWake: true) else {
            throw RelayError(.invalidArgument, "expected a job")
        }
        return (worker, job)
    }

    /// The id of the operation a worker's next step starts, if it starts one.
    mutating func startNext(_ worker: UInt64, ended: [PipelineStateMachine.EndedAttempt] = [], now: Int64 = 0)
        -> UUID?
    {
        guard case .run(let job) = step(worker, ended: ended, now: now) else { return nil }
        return job.record.id
    }

    func state(of id: UUID, now: Int64 = 0) -> CallStatus.State? {
        status(of: id, now: now)?.state
    }

    // MARK: - Events and queries that name operations, which hold the directory as the core's do

    /// A commit as the core makes it: the directory admits the operations, the state machine applies them, and the
    /// transition ends by vacating forgotten operations.
    @discardableResult
    mutating func enqueue(_ batch: [CallOperation], now: Int64) throws(RelayError) -> [OperationRecord] {
        let admission = directory.admit(batch, preparation: CommitPreparation(batch, limits: machine.limits))
        do throws(RelayError) {
            let records = try machine.apply(admission, batch, prebuilt: [], now: now, into: &actions)
            vacateForgotten()
            return records
        } catch {
            directory.giveBack(admission.fresh)
            throw error
        }
    }

    mutating func cancel(_ id: UUID, now: Int64) throws(RelayError) -> Bool {
        defer { vacateForgotten() }
        return try machine.cancel(id, in: directory, now: now, into: &actions)
    }

    mutating func hold(_ id: UUID, until: Int64?, context: String?, now: Int64) throws(RelayError) {
        defer { vacateForgotten() }
        try machine.hold(id, until: until, context: context, in: directory, now: now, into: &actions)
    }

    mutating func subscribe(
        _ sink: any EventSink, to operationID: UUID?, elsewhere: RemoteOutcomes.Standing = .unknown
    ) throws(RelayError) -> UInt64 {
        defer { vacateForgotten() }
        return try machine.subscribe(sink, to: operationID, elsewhere: elsewhere, in: directory, into: &actions)
    }

    /// The core's sweep of operations whose retention window has passed.
    @discardableResult
    mutating func forgetExpired(now: Int64, limit: Int = 256) -> Bool {
        defer { vacateForgotten() }
        return machine.forgetExpired(now: now, limit: limit, into: &actions)
    }

    /// What ends every transition that holds the directory: operations forgotten since leave their slots and the
    /// directory.
    mutating func vacateForgotten() {
        machine.handOverRemoved(to: &directory, into: &actions)
        directory.releaseVacated()
    }

    /// Operations whose claims a shared store lost, as the core lets go of them.
    mutating func abandon(_ ids: [UUID], now: Int64) {
        defer { vacateForgotten() }
        machine.abandon(ids, in: directory, now: now, into: &actions)
    }

    /// Operations a shared store claimed for this process, as the core adds them.
    mutating func adopt(_ operations: [StoredOperation], now: Int64) -> [UUID: CallResult] {
        defer { vacateForgotten() }
        let clock = ClockSource(ManualClock(), origin: Date(timeIntervalSince1970: 0))
        return machine.adopt(operations, clock: clock, directory: &directory, now: now, into: &actions)
    }

    /// Operations a shared store claimed for this process, announced and added as the core does.
    mutating func claim(_ operations: [StoredOperation], now: Int64) {
        machine.announceClaimed(operations, now: now, into: &actions)
        _ = adopt(operations, now: now)
    }

    /// A commit to a shared store that answered with `snapshot`, naming `announced`.
    mutating func endSharedCommit(_ operations: [CallOperation], snapshot: UInt64?, announced: Set<UUID>) {
        machine.endSharedCommit(operations, snapshot: snapshot, announced: announced, now: 0, into: &actions)
    }

    /// Document changes committed to a shared store, applied as the core applies them.
    mutating func applyShared(_ changes: [SharedModelChange]) {
        machine.applySharedModels(changes, now: 0, into: &actions)
    }

    /// Document changes a shared store's follower read, through `version`.
    mutating func followShared(_ changes: [SharedModelChange], through version: UInt64) {
        machine.followSharedModels(changes, through: version, now: 0, into: &actions)
    }

    /// Document changes of a commit of this process's, as it returns from a shared store.
    mutating func applySharedCommit(_ changes: [SharedModelChange]) {
        machine.applySharedCommit(changes, now: 0, into: &actions)
    }

    /// Events of other processes that a shared store read.
    mutating func publish(_ events: [SharedEvent]) {
        machine.publish(events, into: &actions)
    }

    func lookup(_ id: UUID) -> Int32? { machine.lookup(id, in: directory) }
    func status(of id: UUID, now: Int64) -> CallStatus? { machine.status(of: id, in: directory, now: now) }
    func holds(of id: UUID) -> [String?: Date]? { machine.holds(of: id, in: directory) }
    func dependents(of id: UUID) -> [UUID]? { machine.dependents(of: id, in: directory) }

    /// The lane's counts, as metrics show them.
    var counts: MetricsSnapshot.Counts {
        machine.metricsSnapshot(droppedEvents: 0).sequences[.data] ?? .init()
    }

    var running: Int { machine.metricsSnapshot(droppedEvents: 0).running }
}

extension PipelineStateMachine.EndedAttempt {
    static func completed(_ job: PipelineStateMachine.Job) -> Self {
        .init(slot: job.slot, end: .outcome(.completed(Data())))
    }
}
