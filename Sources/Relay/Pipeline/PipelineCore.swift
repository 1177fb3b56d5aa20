import Foundation
import Synchronization

/// Runs the pipeline's state machine under its locks and performs what it asks for outside them.
///
/// The actors (``DataPoint``, ``Pipeline``, ``CallSequence``) are the public faces; this is the hot path they share.
/// Workers call it directly, so that starting and finishing an operation costs two short critical sections rather
/// than actor hops.
///
/// One entry into the state machine, ``transition(into:_:)``: it applies one event under the lock, and returns the
/// event's value with the ``PipelineActions`` it asks for; records go to storage and events to the outbox, and the
/// models it staged are sealed with the records' ticket, before the lock is let go, so that each sees transitions in
/// the order they happened; the rest is performed outside it once the records are durable (``acknowledge(_:)``).
/// ``read(_:)`` only looks. Nothing else takes the state's lock.
///
/// A second lock covers the ``OperationDirectory`` of ids, so that a commit admits its operations while workers, which
/// never look an id up, go on. The directory is taken first, and only by what needs it: a commit, a command or read
/// that names an operation, and the transitions that vacate forgotten operations (``transitionWithDirectory(_:)``,
/// ``readWithDirectory(_:)``).
final class PipelineCore: Sendable {
    /// What a commit hands back: the records for the handles, the snapshot the next commit likely gets, and whether
    /// more expired operations wait to be forgotten.
    struct AppliedCommit: Sendable {
        let records: [OperationRecord]
        let nextSnapshot: UInt64
        let backlog: Bool
        /// The positions of the commit's new operations.
        let fresh: [Int32]
    }

    /// What the shell still owes an event once the lock is let go, besides its actions.
    struct Receipt: Sendable {
        /// The ticket of the records the event appended; ``StorageTicket/durable`` when it appended none.
        let ticket: StorageTicket
        /// Whether the event posted events to the outbox.
        let postedEvents: Bool
        /// Whether the event staged model changes, which readers see once its ticket is durable.
        let stagedModels: Bool
    }

    /// An event's value and actions, and its receipt.
    struct Transition<Value: Sendable>: Sendable {
        let value: Value
        var actions: PipelineActions
        let receipt: Receipt

        var ticket: StorageTicket { receipt.ticket }
    }

    /// The state machine, and the ticket of the last records handed to storage: a transition that records nothing
    /// still waits for it before its events reach subscribers.
    private struct Locked: Sendable {
        var machine: PipelineStateMachine
        var lastTicket = StorageTicket.durable
    }

    /// Reached only through ``transition(into:_:)`` and ``read(_:)``.
    private let state: StateLock<Locked>
    let directory = StateLock(OperationDirectory())
    /// Each transition's events, until the transition is durable.
    let events = EventOutbox()
    let storage: any Storage
    /// The store, when several processes share it: commits go to it, and it claims what this process runs.
    let shared: (any SharedStorage)?
    /// The handles of operations committed to a shared store, until it reports their outcomes.
    let remote = RemoteOutcomes()
    let clock: ClockSource
    /// The deadlines of running attempts, on a loop and a lock of their own.
    let attemptTimer: AttemptTimer
    let configuration: DataPoint.Configuration
    /// The state machine's limits, kept here too so that commits are validated before the lock is taken.
    let limits: PipelineStateMachine.Limits
    /// Whether the configuration has observers, read on every attempt and commit.
    let observing: Bool
    /// The snapshot the next commit is likely to get: a hint for building records outside the lock.
    private let expectedSnapshot = Atomic<UInt64>(1)

    init(storage: any Storage, clock: ClockSource, configuration: DataPoint.Configuration) {
        self.storage = storage
        shared = storage as? any SharedStorage
        self.clock = clock
        attemptTimer = AttemptTimer(clock: clock)
        self.configuration = configuration
        let limits = PipelineStateMachine.Limits(
            retention: configuration.retentionPolicy,
            maximumPayloadSize: configuration.maximumPayloadSize,
            metricsWindow: configuration.metricsWindow,
            maximumPending: configuration.maximumPending,
            maximumPendingBytes: configuration.maximumPendingBytes,
            eventHistorySize: configuration.eventHistorySize
        )
        self.limits = limits
        observing = !configuration.observers.isEmpty
        let machine = PipelineStateMachine(
            origin: clock.origin, limits: limits, recording: storage.keepsRecords,
            observing: observing, sharing: storage is any SharedStorage)
        state = StateLock(Locked(machine: machine))
    }

    /// The entry into the state machine: applies one event under the lock, writing what it asks for into `actions`.
    ///
    /// Before the lock is let go, the event's records go to storage, its events to the outbox, and the models it staged
    /// are sealed with the records' ticket, so that each sees transitions in the order they happened. What is left in
    /// `actions` is for the caller to perform once the receipt's ticket is durable (``acknowledge(_:_:)``).
    @inline(__always)
    func transition<Value: Sendable, Failure: Error>(
        into actions: inout PipelineActions,
        _ event: (inout PipelineStateMachine, inout PipelineActions) throws(Failure) -> Value
    ) throws(Failure) -> (value: Value, receipt: Receipt) {
        try state.withLock { (locked) throws(Failure) -> (value: Value, receipt: Receipt) in
            let value = try event(&locked.machine, &actions)
            locked.machine.finish(&actions, now: clock.now)
            var ticket = StorageTicket.durable
            if !actions.records.isEmpty {
                ticket = storage.append(actions.records)
                locked.lastTicket = ticket
                actions.records.removeAll(keepingCapacity: true)
            }
            let posted = !actions.events.steps.isEmpty
            if posted {
                events.post(actions.events.steps, after: locked.lastTicket)
                actions.events.steps.removeAll(keepingCapacity: true)
            }
            let staged = actions.stagedModels
            if staged {
                // The event staged models: readers see them once this ticket is durable (S20, S21).
                locked.machine.document.seal(ticket)
                actions.stagedModels = false
            }
            return (value, Receipt(ticket: ticket, postedEvents: posted, stagedModels: staged))
        }
    }

    /// Applies one event with actions of its own.
    @inline(__always)
    func transition<Value: Sendable, Failure: Error>(
        _ event: (inout PipelineStateMachine, inout PipelineActions) throws(Failure) -> Value
    ) throws(Failure) -> Transition<Value> {
        var actions = PipelineActions()
        let (value, receipt) = try transition(into: &actions, event)
        return Transition(value: value, actions: actions, receipt: receipt)
    }

    /// A transition that holds the directory too; it ends by vacating the operations forgotten since the last such
    /// transition, whose ids leave the directory once the state lock is let go.
    func transitionWithDirectory<Value: Sendable, Failure: Error>(
        _ body: (inout PipelineStateMachine, inout OperationDirectory, inout PipelineActions) throws(Failure) -> Value
    ) throws(Failure) -> Transition<Value> {
        try directory.withLock { (directory) throws(Failure) -> Transition<Value> in
            let done = try transition { (machine, actions) throws(Failure) -> Value in
                let value = try body(&machine, &directory, &actions)
                machine.handOverRemoved(to: &directory, into: &actions)
                return value
            }
            directory.releaseVacated()
            return done
        }
    }

    /// Waits until the event is durable, then delivers its events and performs its actions; nothing is acknowledged
    /// before that.
    ///
    /// Only the workers it wakes go at once: what they start waits for records after its own (see
    /// ``PipelineActions/wakeWorkers()``).
    func acknowledge(_ receipt: Receipt, _ actions: inout PipelineActions) async throws(RelayError) {
        guard receipt.ticket != .durable else { return perform(receipt, actions) }
        actions.wakeWorkers()
        do {
            try await storage.waitUntilDurable(receipt.ticket)
        } catch {
            let failure = error as? RelayError ?? RelayError(.storageFailure, "storage failed: \(error)")
            // The store never kept the transition's models: the document goes back to what it holds (S20).
            if receipt.stagedModels { changeDocument { $0.revert(from: receipt.ticket) } }
            // Nothing more starts: the store can no longer record it, and what the write carried must not run.
            apply { machine, _ in machine.storeFailure = machine.storeFailure ?? failure }
            events.fail()
            actions.failResults(with: failure)
            actions.perform()
            handOver(actions.handedToStore)
            throw failure
        }
        if receipt.stagedModels { changeDocument { $0.publish(through: receipt.ticket) } }
        events.deliver(through: receipt.ticket)
        actions.perform(observers: configuration.observers)
        handOver(actions.handedToStore)
    }

    /// Lets the handles of operations given back to a shared store wait for its report, and vacates their slots.
    private func handOver(_ records: [OperationRecord]) {
        guard !records.isEmpty else { return }
        remote.attach(records)
        perform(transitionWithDirectory { _, _, _ in })
    }

    func acknowledge<Value>(_ transition: Transition<Value>) async throws(RelayError) {
        var actions = transition.actions
        try await acknowledge(transition.receipt, &actions)
    }

    /// Completes an event that appended no records: delivers the events that are durable already, its own among them
    /// once the records it follows are, and performs its actions.
    func perform(_ receipt: Receipt, _ actions: PipelineActions) {
        if receipt.postedEvents { events.deliver(through: nil) }
        guard !actions.isEmpty else { return }
        actions.perform(observers: configuration.observers)
        handOver(actions.handedToStore)
    }

    func perform<Value>(_ transition: Transition<Value>) {
        perform(transition.receipt, transition.actions)
    }

    /// Applies an event that appends nothing to storage, and performs what it asks for at once.
    @discardableResult
    func apply<Value: Sendable, Failure: Error>(
        _ event: (inout PipelineStateMachine, inout PipelineActions) throws(Failure) -> Value
    ) throws(Failure) -> Value {
        let done = try transition(event)
        assert(done.ticket == .durable, "an event applied at once appended records")
        perform(done)
        return done.value
    }

    // MARK: - Commands

    /// Runs a command that names operations, holding the directory too, and returns its value once it is
    /// acknowledged.
    @discardableResult
    func commandWithDirectory<Value: Sendable>(
        _ body:
            (inout PipelineStateMachine, inout OperationDirectory, inout PipelineActions, _ now: Int64)
            throws(RelayError) -> Value
    ) async throws(RelayError) -> Value {
        let now = clock.now
        let done = try transitionWithDirectory { (machine, directory, actions) throws(RelayError) in
            try body(&machine, &directory, &actions, now)
        }
        try await acknowledge(done)
        return done.value
    }

    /// Runs a command's transition at the current clock time and returns its value once it is acknowledged.
    @discardableResult
    func command<Value: Sendable>(
        _ body: (inout PipelineStateMachine, inout PipelineActions, _ now: Int64) throws(RelayError) -> Value
    ) async throws(RelayError) -> Value {
        let now = clock.now
        let done = try transition { (machine, actions) throws(RelayError) in try body(&machine, &actions, now) }
        try await acknowledge(done)
        return done.value
    }

    /// Commits `operations` and a transaction's model `changes` atomically, and returns the operations' records, for
    /// the handles, once the commit is durable.
    ///
    /// Records are built, and the operations checked, before any lock is taken, for the snapshot the previous commit
    /// suggests; the state machine builds them itself in the rare case that another commit came first. The directory
    /// admits the operations before the state lock is taken, so workers go on meanwhile; holding the directory until
    /// the state has applied the commit keeps the admission valid (see ``OperationDirectory``). The same transition
    /// forgets as many expired operations as the commit brought, so that a steady stream keeps the table at its size;
    /// a larger backlog is forgotten in steps afterwards. A rejected commit changes nothing.
    ///
    /// Operations named in `startTimes` are held until then, by a hold of context ``CallOperation/startContext`` in
    /// the same transition; one that was known already keeps its own schedule.
    func enqueue(
        _ operations: [CallOperation], changes: [ModelChange] = [], erasures: [Alias] = [],
        startTimes: [UUID: Int64] = [:]
    ) async throws(RelayError) -> [OperationRecord] {
        // HTTP calls enqueued where an authorizer authorizes them never go out without one (S18).
        let authorizing = operations.contains { $0.kind == .http } && read { $0.executorIndex[.authorizedHTTP] != nil }
        var operations = authorizing ? CallOperation.requiringAuthorizer(operations) : operations
        if observing { operations = carrying(operations) }
        if let shared {
            let records = try await enqueueShared(
                shared, operations, changes: changes, erasures: erasures, startTimes: startTimes)
            if observing { for observer in configuration.observers { observer.enqueued(operations) } }
            return records
        }
        let expected = expectedSnapshot.load(ordering: .relaxed)
        let prebuilt = OperationRecord.records(for: operations, snapshot: expected)
        let preparation = CommitPreparation(operations, limits: limits)
        let now = clock.now
        let applied = try directory.withLock { (directory) throws(RelayError) -> Transition<AppliedCommit> in
            let admission = directory.admit(operations, preparation: preparation)
            let applied: Transition<AppliedCommit>
            do throws(RelayError) {
                applied = try transition { (machine, actions) throws(RelayError) -> AppliedCommit in
                    // Checked before anything applies, against the document as earlier commits leave it.
                    if !changes.isEmpty {
                        try machine.document.checkRelations(in: changes)
                    }
                    let before = machine.graph.lastSnapshot
                    let records = try machine.apply(
                        admission, operations, prebuilt: prebuilt, now: now, into: &actions)
                    if !startTimes.isEmpty {
                        for slot in admission.fresh {
                            guard let start = startTimes[machine.graph[slot].record.operation.id] else { continue }
                            machine.hold(
                                slot, until: start, context: CallOperation.startContext, now: now, into: &actions)
                        }
                    }
                    if !changes.isEmpty || !erasures.isEmpty {
                        // The models go in the same transition, so in the same frame, as the commit of the operations;
                        // an erasure cascades over the document as the transaction's other changes leave it.
                        machine.document.stage(changes)
                        // Removed models take their relations with them; erased ones what they own too.
                        let cascade =
                            machine.document.relationsOfRemoved(changes)
                            + (erasures.isEmpty ? [] : machine.document.erasure(of: erasures))
                        machine.document.stage(cascade)
                        let all = cascade.isEmpty ? changes : changes + cascade
                        actions.stagedModels = true
                        if !all.isEmpty {
                            machine.commitModels(all, snapshotBefore: before, now: now, into: &actions)
                        }
                    }
                    let backlog = machine.forgetExpired(now: now, limit: max(operations.count, 1), into: &actions)
                    machine.handOverRemoved(to: &directory, into: &actions)
                    return AppliedCommit(
                        records: records, nextSnapshot: machine.graph.nextSnapshot, backlog: backlog,
                        fresh: admission.positions)
                }
            } catch {
                directory.giveBack(admission.fresh)
                throw error
            }
            directory.releaseVacated()
            return applied
        }
        try await acknowledge(applied)
        expectedSnapshot.store(applied.value.nextSnapshot, ordering: .relaxed)
        if observing, !applied.value.fresh.isEmpty {
            let fresh = applied.value.fresh.map { applied.value.records[Int($0)].operation }
            for observer in configuration.observers { observer.enqueued(fresh) }
        }
        if applied.value.backlog { forgetExpired() }
        return applied.value.records
    }

    /// Forgets the operations whose retention window has passed, a few at a time.
    ///
    /// Forgetting is housekeeping, and one critical section for a whole backlog (a burst of operations whose window
    /// ends at once) would keep every worker and every caller waiting behind it.
    func forgetExpired() {
        let now = clock.now
        var more = true
        while more {
            let forgotten = transitionWithDirectory { machine, _, actions in
                machine.forgetExpired(now: now, limit: 256, into: &actions)
            }
            perform(forgotten)
            more = forgotten.value
        }
    }

    // MARK: - Queries

    /// The read accessor: looks at the state under its lock, and changes nothing.
    func read<Value: Sendable, Failure: Error>(
        _ body: (borrowing PipelineStateMachine) throws(Failure) -> Value
    ) throws(Failure) -> Value {
        try state.withLock { (locked) throws(Failure) -> Value in try body(locked.machine) }
    }

    /// A read that looks operations up by id.
    func readWithDirectory<Value: Sendable>(
        _ body: (borrowing PipelineStateMachine, borrowing OperationDirectory) -> Value
    ) -> Value {
        directory.withLock { directory in read { body($0, directory) } }
    }
}
