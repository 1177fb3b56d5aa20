import Foundation
import Synchronization

/// Runs the pipeline's state machine under its lock and performs what it asks for outside the lock.
///
/// The actors (``DataPoint``, ``Pipeline``, ``CallSequence``) are the public faces; this is the hot path they share.
/// Workers call it directly, so that starting and finishing an operation costs two short critical sections rather
/// than actor hops.
///
/// Two locks, always taken in this order: the directory's (which slot holds each id) and the state machine's.
/// Workers take only the state machine's, and a commit holds it only to apply what the directory admitted, so
/// commits and workers mostly run side by side; every other transition takes both.
final class PipelineCore: Sendable {
    /// What a commit's step hands back: the records for the handles, the snapshot the next commit likely gets, the
    /// slots it evicted, and whether more expired operations wait.
    struct AppliedCommit: Sendable {
        let records: [OperationRecord]
        let nextSnapshot: UInt64
        let expired: [Int32]
        let backlog: Bool
    }

    struct Transition<Value: Sendable>: Sendable {
        let value: Value
        var effects: PipelineEffects
        let ticket: StorageTicket
    }

    let state: StateLock<PipelineStateMachine>
    let directory: StateLock<OperationDirectory>
    let storage: any Storage
    let clock: ClockSource
    let configuration: DataPoint.Configuration
    /// The state machine's limits, kept here too so that commits are validated before the lock is taken.
    let limits: PipelineStateMachine.Limits
    /// The snapshot the next commit is likely to get: a hint for building records outside the lock.
    private let expectedSnapshot = Atomic<UInt64>(1)

    init(storage: any Storage, clock: ClockSource, configuration: DataPoint.Configuration) {
        self.storage = storage
        self.clock = clock
        self.configuration = configuration
        let limits = PipelineStateMachine.Limits(
            retention: configuration.retention.relayNanoseconds,
            maximumPayloadSize: configuration.maximumPayloadSize,
            metricsWindow: configuration.metricsWindow
        )
        self.limits = limits
        var machine = PipelineStateMachine(origin: clock.origin, limits: limits, recording: storage.keepsRecords)
        var directory = OperationDirectory.lent
        swap(&directory, &machine.directory)
        self.directory = StateLock(directory)
        state = StateLock(machine)
    }

    /// Runs one transition under both locks, with the directory lent to the state machine, and hands its records to
    /// storage in the same critical section, so the store sees transitions in the order they happened.
    @inline(__always)
    func transition<Value: Sendable, Failure: Error>(
        _ body: (inout PipelineStateMachine) throws(Failure) -> Value
    ) throws(Failure) -> Transition<Value> {
        try withDirectoryLent { (machine) throws(Failure) -> Transition<Value> in
            try Self.complete(&machine, storage: storage, value: body(&machine))
        }
    }

    /// Runs `body` under both locks, with the directory lent to the state machine for its duration.
    @inline(__always)
    private func withDirectoryLent<Value: Sendable, Failure: Error>(
        _ body: (inout PipelineStateMachine) throws(Failure) -> Value
    ) throws(Failure) -> Value {
        try directory.withLock { (directory) throws(Failure) -> Value in
            try state.withLock { (machine) throws(Failure) -> Value in
                machine.releaseForgotten(in: &directory)
                swap(&machine.directory, &directory)
                defer { swap(&machine.directory, &directory) }
                return try body(&machine)
            }
        }
    }

    /// A transition under the state machine's lock alone, for workers: nothing they do looks an operation up by id.
    @inline(__always)
    func workerTransition<Value: Sendable>(
        _ body: (inout PipelineStateMachine) -> Value
    ) -> Transition<Value> {
        state.withLock { machine in Self.complete(&machine, storage: storage, value: body(&machine)) }
    }

    /// A worker's transition that swaps the records the state machine let go of into `released`, the worker's own
    /// buffer, whose spare capacity takes their place: workers forget operations as they finish them (see
    /// ``PipelineStateMachine/retain(_:finishedAt:)``), and handing those records out with the other effects allocated
    /// a fresh array on every batch.
    @inline(__always)
    func workerTransition<Value: Sendable>(
        released: inout [OperationRecord],
        _ body: (inout PipelineStateMachine) -> Value
    ) -> Transition<Value> {
        state.withLock { machine in
            let value = body(&machine)
            swap(&machine.effects.released, &released)
            return Self.complete(&machine, storage: storage, value: value)
        }
    }

    /// Hands a transition's records to storage and takes its effects, still under the lock.
    @inline(__always)
    private static func complete<Value: Sendable>(
        _ machine: inout PipelineStateMachine,
        storage: any Storage,
        value: Value
    ) -> Transition<Value> {
        var ticket = StorageTicket.durable
        if !machine.records.isEmpty {
            ticket = storage.append(machine.records)
            machine.records.removeAll(keepingCapacity: true)
        }
        return Transition(value: value, effects: machine.takeEffects(), ticket: ticket)
    }

    /// Waits until the transition is durable, then resumes its waiters; nothing is acknowledged before that.
    func acknowledge<Value>(_ transition: Transition<Value>) async throws(RelayError) {
        if transition.ticket != .durable {
            do {
                try await storage.waitUntilDurable(transition.ticket)
            } catch {
                let failure = error as? RelayError ?? RelayError(.storageFailure, "storage failed: \(error)")
                var effects = transition.effects
                effects.failResults(with: failure)
                effects.perform()
                throw failure
            }
        }
        transition.effects.perform()
    }

    // MARK: - Commands

    /// Runs a command's transition at the current clock time and returns its value once it is acknowledged.
    @discardableResult
    func command<Value: Sendable>(
        _ body: (inout PipelineStateMachine, _ now: Int64) throws(RelayError) -> Value
    ) async throws(RelayError) -> Value {
        let now = clock.now
        let done = try transition { (machine) throws(RelayError) in try body(&machine, now) }
        try await acknowledge(done)
        return done.value
    }

    /// Builds the commit's records before taking a lock, for the snapshot the previous commit suggests; the state
    /// machine builds them itself in the rare case that another commit came first.
    ///
    /// The directory admits the commit under its own lock; the state machine's lock is held only while the state
    /// machine applies it. The same step forgets as many expired operations as the commit brought, so that a steady
    /// stream keeps the table at its size without critical sections of its own for eviction; a larger backlog is
    /// forgotten in steps afterwards. A rejected commit forgets nothing and leaves the directory as it was.
    func enqueue(_ operations: [CallOperation]) async throws(RelayError) -> [OperationRecord] {
        let expected = expectedSnapshot.load(ordering: .relaxed)
        let prebuilt = OperationRecord.records(for: operations, snapshot: expected)
        let preparation = CommitPreparation(operations, limits: limits)
        let now = clock.now
        // Records of operations that workers forgot: the committing task made them, and lets them go outside both
        // locks, on its own thread, which the allocator serves best.
        var forgotten: [OperationRecord] = []
        let admitted = try directory.withLock { (directory) throws(RelayError) -> Transition<AppliedCommit>? in
            forgotten = Self.releaseForgotten(in: &directory, of: state)
            let admission = directory.admit(operations, preparation: preparation)
            do throws(RelayError) {
                let applied = try state.withLock { (machine) throws(RelayError) -> Transition<AppliedCommit>? in
                    guard !machine.namesForgottenOperation(admission) else { return nil }
                    let records = try machine.apply(admission, operations, prebuilt: prebuilt, now: now)
                    let (expired, more) = machine.expire(now: now, limit: max(operations.count, 1))
                    let value = AppliedCommit(
                        records: records, nextSnapshot: machine.lastSnapshot + 1, expired: expired, backlog: more)
                    return Self.complete(&machine, storage: storage, value: value)
                }
                guard let applied else {
                    directory.giveBack(admission.fresh)
                    return nil
                }
                directory.release(applied.value.expired)
                return applied
            } catch {
                directory.giveBack(admission.fresh)
                throw error
            }
        }
        // A worker forgot an operation that the commit names while the directory admitted it; committing again with
        // both locks held, where nothing is forgotten behind the directory's back, treats it as any forgotten one.
        let applied: Transition<AppliedCommit>
        if let admitted {
            applied = admitted
        } else {
            applied = try transition { (machine) throws(RelayError) -> AppliedCommit in
                let records = try machine.enqueue(operations, prebuilt: prebuilt, preparation: preparation, now: now)
                let more = machine.evictExpired(now: now, limit: max(operations.count, 1))
                return AppliedCommit(
                    records: records, nextSnapshot: machine.lastSnapshot + 1, expired: [], backlog: more)
            }
        }
        withExtendedLifetime(forgotten) {}
        try await acknowledge(applied)
        expectedSnapshot.store(applied.value.nextSnapshot, ordering: .relaxed)
        if applied.value.backlog { evictExpired() }
        return applied.value.records
    }

    /// Releases in the directory the slots that workers forgot without it, for a worker that is about to park, unless
    /// a commit holds the directory.
    ///
    /// Otherwise the next commit releases them, and none of its operations can start until it has: after a burst,
    /// that is every operation that finished after the burst's last commit.
    func releaseForgottenIfIdle() {
        _ = directory.withLockIfAvailable { Self.releaseForgotten(in: &$0, of: state) }
    }

    /// Releases in the directory the slots that workers forgot without it, taken from the state machine in a critical
    /// section of their own: releasing them there kept every worker waiting while the index let go of each id.
    private static func releaseForgotten(
        in directory: inout OperationDirectory,
        of state: borrowing StateLock<PipelineStateMachine>
    ) -> [OperationRecord] {
        var forgotten: [Int32] = []
        var records: [OperationRecord] = []
        swap(&forgotten, &directory.spareForgotten)
        state.withLock {
            swap(&$0.forgotten, &forgotten)
            swap(&$0.forgottenRecords, &records)
        }
        directory.release(forgotten)
        forgotten.removeAll(keepingCapacity: true)
        swap(&forgotten, &directory.spareForgotten)
        return records
    }

    /// Forgets the operations whose retention window has passed, a few at a time.
    ///
    /// Eviction is housekeeping, and one critical section for a whole backlog (a burst of operations whose window
    /// ends at once) would keep every worker and every caller waiting behind it. The directory frees the slots after
    /// the state machine's lock is released.
    func evictExpired() {
        let now = clock.now
        var more = true
        while more {
            let evicted = directory.withLock { directory -> Transition<(slots: [Int32], more: Bool)> in
                let evicted = state.withLock { machine in
                    machine.releaseForgotten(in: &directory)
                    return Self.complete(&machine, storage: storage, value: machine.expire(now: now, limit: 256))
                }
                directory.release(evicted.value.slots)
                return evicted
            }
            evicted.effects.perform()
            more = evicted.value.more
        }
    }

    func cancel(_ id: UUID) async throws(RelayError) -> Bool {
        try await command { (machine, now) throws(RelayError) in try machine.cancel(id, now: now) }
    }

    func hold(_ id: UUID, until: Date?, context: String?) async throws(RelayError) {
        let deadline = until.map(clock.time(of:))
        try await command { (machine, now) throws(RelayError) in
            try machine.hold(id, until: deadline, context: context, now: now)
        }
    }

    func suspend(_ name: CallSequence.Name?, reason: String) async throws(RelayError) -> Int {
        try await command { (machine, now) throws(RelayError) in
            try machine.suspend(lane: name.map(machine.registeredLane), reason: reason, now: now)
        }
    }

    func resume(_ name: CallSequence.Name?, reason: String) async throws(RelayError) -> Int {
        try await command { (machine, now) throws(RelayError) in
            try machine.resume(lane: name.map(machine.registeredLane), reason: reason, now: now)
        }
    }

    func register(_ executor: any CallExecutor, for kind: CallKind) {
        let now = clock.now
        transition { $0.register(executor, for: kind, now: now) }.effects.perform()
    }

    func upsertLane(
        _ name: CallSequence.Name,
        sequence: CallSequence,
        bunchSize: Int,
        algorithm: CallSequence.Algorithm,
        addingSuspensions: Int
    ) async throws(RelayError) {
        try await command { machine, now in
            machine.upsertLane(
                name,
                sequence: sequence,
                bunchSize: bunchSize,
                algorithm: algorithm,
                addingSuspensions: addingSuspensions,
                now: now
            )
        }
    }

    func adoptLane(_ name: CallSequence.Name, sequence: CallSequence) async throws(RelayError) {
        try await command { machine, _ in machine.adoptLane(name, sequence: sequence) }
    }

    /// Lets go of every lane's sequence actor, once the DataPoint that owns the pipeline is gone.
    func releaseSequences() {
        state.withLock { machine in
            for lane in machine.lanes.indices { machine.lanes[lane].sequence = nil }
        }
    }

    func setBunchSize(_ size: Int, of name: CallSequence.Name) async throws(RelayError) {
        try await command { (machine, now) throws(RelayError) in try machine.setBunchSize(size, lane: name, now: now) }
    }

    func setAlgorithm(_ algorithm: CallSequence.Algorithm, of name: CallSequence.Name) async throws(RelayError) {
        try await command { (machine, now) throws(RelayError) in
            try machine.setAlgorithm(algorithm, lane: name, now: now)
        }
    }

    func restore(_ stored: StoredState) async throws(RelayError) {
        let clock = self.clock
        try await command { machine, now in machine.restore(stored, clock: clock, now: now) }
    }

    // MARK: - Queries

    func read<Value: Sendable>(_ body: (borrowing PipelineStateMachine) -> Value) -> Value {
        withDirectoryLent { body($0) }
    }

    // MARK: - Events

    func subscribe(to operationID: UUID?, bufferSize: Int) throws(RelayError) -> CallEventStream {
        let subscription = EventSubscription(capacity: bufferSize)
        let subscribed = try transition { (machine) throws(RelayError) in
            try machine.subscribe(subscription, to: operationID)
        }
        subscribed.effects.perform()
        let id = subscribed.value
        let lifetime = SubscriptionLifetime(subscription: subscription) { [weak self] in
            guard id != 0, let self else { return }
            self.state.withLock { $0.unsubscribe(id, from: operationID) }
        }
        return CallEventStream(lifetime: lifetime)
    }

    func addSink(_ sink: any EventSink) {
        let subscribed = try? transition { (machine) throws(RelayError) in try machine.subscribe(sink, to: nil) }
        subscribed?.effects.perform()
    }
}
