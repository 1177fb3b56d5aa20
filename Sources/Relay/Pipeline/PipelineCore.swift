import Foundation
import Synchronization

/// Runs the pipeline's state machine under its locks and performs what it asks for outside them.
///
/// The actors (``DataPoint``, ``Pipeline``, ``CallSequence``) are the public faces; this is the hot path they share.
/// Workers call it directly, so that starting and finishing an operation costs two short critical sections rather
/// than actor hops.
///
/// Two locks: one over the state machine, and one over the ``OperationDirectory`` of ids, so that a commit admits its
/// operations while workers, which never look an id up, go on. The directory is taken first, and only by what needs
/// it: a commit, a command or read that names an operation, and the transitions that vacate forgotten operations.
/// Two ways into the state: a ``transition(_:)``, which may change it, hands its records to storage and its events to
/// the outbox; a ``read(_:)`` only looks. Each has a form that holds the directory too
/// (``transitionWithDirectory(_:)``, ``readWithDirectory(_:)``).
final class PipelineCore: Sendable {
    /// What a commit hands back: the records for the handles, the snapshot the next commit likely gets, and whether
    /// more expired operations wait to be forgotten.
    struct AppliedCommit: Sendable {
        let records: [OperationRecord]
        let nextSnapshot: UInt64
        let backlog: Bool
    }

    struct Transition<Value: Sendable>: Sendable {
        let value: Value
        var effects: PipelineEffects
        /// The ticket of the records the transition appended; ``StorageTicket/durable`` when it appended none.
        let ticket: StorageTicket
        /// Whether the transition posted events to the outbox.
        let postedEvents: Bool
        /// Whether the transition staged model changes, which readers see once its ticket is durable.
        var stagedModels = false
    }

    /// The state machine, reached only through ``transition(_:)`` and ``read(_:)``.
    private let state: StateLock<PipelineStateMachine>
    let directory = StateLock(OperationDirectory())
    /// The document's models; its lock is taken last, after the directory's and the state's.
    let document = StateLock(Document())
    /// Each transition's events, until the transition is durable.
    let events = EventOutbox()
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
            retention: configuration.retentionPolicy,
            maximumPayloadSize: configuration.maximumPayloadSize,
            metricsWindow: configuration.metricsWindow
        )
        self.limits = limits
        state = StateLock(PipelineStateMachine(origin: clock.origin, limits: limits, recording: storage.keepsRecords))
    }

    /// Runs one transition under the lock, and hands its records to storage in the same critical section, so the
    /// store sees transitions in the order they happened.
    @inline(__always)
    func transition<Value: Sendable, Failure: Error>(
        _ body: (inout PipelineStateMachine) throws(Failure) -> Value
    ) throws(Failure) -> Transition<Value> {
        try state.withLock { (machine) throws(Failure) -> Transition<Value> in
            try complete(&machine, value: body(&machine))
        }
    }

    /// A transition that holds the directory too; it ends by vacating the operations forgotten since the last such
    /// transition, whose ids leave the directory once the state lock is let go.
    func transitionWithDirectory<Value: Sendable, Failure: Error>(
        _ body: (inout PipelineStateMachine, inout OperationDirectory) throws(Failure) -> Value
    ) throws(Failure) -> Transition<Value> {
        try directory.withLock { (directory) throws(Failure) -> Transition<Value> in
            let done = try transition { (machine) throws(Failure) -> Value in
                let value = try body(&machine, &directory)
                machine.handOverRemoved(to: &directory)
                return value
            }
            directory.releaseVacated()
            return done
        }
    }

    /// A worker's transition, whose effects fill the arrays of `buffer`, emptied, instead of fresh ones.
    ///
    /// A worker takes one step per batch, and fresh arrays for each step's outcomes and released records cost an
    /// allocation or two per step; the worker swaps the step's effects back into `buffer` once it has performed them.
    @inline(__always)
    func transition<Value: Sendable>(
        reusing buffer: inout PipelineEffects,
        _ body: (inout PipelineStateMachine) -> Value
    ) -> Transition<Value> {
        state.withLock { machine in
            swap(&machine.effects, &buffer)
            return complete(&machine, value: body(&machine))
        }
    }

    /// Hands a transition's records to storage and its events to the outbox, and takes its effects, still under the
    /// lock, so that both see transitions in the order they happened.
    @inline(__always)
    private func complete<Value: Sendable>(
        _ machine: inout PipelineStateMachine,
        value: Value
    ) -> Transition<Value> {
        var ticket = StorageTicket.durable
        if !machine.records.isEmpty {
            ticket = storage.append(machine.records)
            machine.lastTicket = ticket
            machine.records.removeAll(keepingCapacity: true)
        }
        let steps = machine.hub.takeSteps()
        events.post(steps, after: machine.lastTicket)
        let staged = machine.stagedModels
        if staged {
            machine.stagedModels = false
            document.withLock { $0.seal(ticket) }
        }
        return Transition(
            value: value, effects: machine.takeEffects(now: clock.now), ticket: ticket, postedEvents: !steps.isEmpty,
            stagedModels: staged)
    }

    /// Waits until the transition is durable, then delivers its events and resumes its waiters; nothing is
    /// acknowledged before that.
    func acknowledge<Value>(_ transition: Transition<Value>) async throws(RelayError) {
        guard transition.ticket != .durable else { return perform(transition) }
        do {
            try await storage.waitUntilDurable(transition.ticket)
        } catch {
            let failure = error as? RelayError ?? RelayError(.storageFailure, "storage failed: \(error)")
            // The store never kept the transition's models: the document goes back to what it holds (S20).
            if transition.stagedModels { document.withLock { $0.revert(from: transition.ticket) } }
            events.fail()
            var effects = transition.effects
            effects.failResults(with: failure)
            effects.perform()
            throw failure
        }
        if transition.stagedModels { document.withLock { $0.publish(through: transition.ticket) } }
        events.deliver(through: transition.ticket)
        transition.effects.perform()
    }

    /// Applies an event that appends nothing to storage, and performs what it asks for at once.
    @discardableResult
    func apply<Value: Sendable>(_ event: (inout PipelineStateMachine) -> Value) -> Value {
        let done = transition(event)
        assert(done.ticket == .durable, "an event applied at once appended records")
        perform(done)
        return done.value
    }

    /// Completes a transition that appended no records: delivers the events that are durable already, its own among
    /// them once the records it follows are, and resumes its waiters.
    func perform<Value>(_ transition: Transition<Value>) {
        if transition.postedEvents { events.deliver(through: nil) }
        if !transition.effects.isEmpty { transition.effects.perform() }
    }

    // MARK: - Commands

    /// Runs a command that names operations, holding the directory too, and returns its value once it is
    /// acknowledged.
    @discardableResult
    func commandWithDirectory<Value: Sendable>(
        _ body: (inout PipelineStateMachine, inout OperationDirectory, _ now: Int64) throws(RelayError) ->
            Value
    ) async throws(RelayError) -> Value {
        let now = clock.now
        let done = try transitionWithDirectory { (machine, directory) throws(RelayError) in
            try body(&machine, &directory, now)
        }
        try await acknowledge(done)
        return done.value
    }

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
        let operations = authorizing ? CallOperation.requiringAuthorizer(operations) : operations
        let expected = expectedSnapshot.load(ordering: .relaxed)
        let prebuilt = OperationRecord.records(for: operations, snapshot: expected)
        let preparation = CommitPreparation(operations, limits: limits)
        let now = clock.now
        let applied = try directory.withLock { (directory) throws(RelayError) -> Transition<AppliedCommit> in
            let admission = directory.admit(operations, preparation: preparation)
            let applied: Transition<AppliedCommit>
            do throws(RelayError) {
                applied = try transition { (machine) throws(RelayError) -> AppliedCommit in
                    // Checked before anything applies, against the document as earlier commits leave it.
                    if !changes.isEmpty {
                        try document.withLock { (document) throws(RelayError) in
                            try document.checkRelations(in: changes)
                        }
                    }
                    let before = machine.graph.lastSnapshot
                    let records = try machine.apply(admission, operations, prebuilt: prebuilt, now: now)
                    if !startTimes.isEmpty {
                        for slot in admission.fresh {
                            guard let start = startTimes[machine.graph[slot].record.operation.id] else { continue }
                            machine.hold(slot, until: start, context: CallOperation.startContext, now: now)
                        }
                    }
                    if !changes.isEmpty || !erasures.isEmpty {
                        // The models go in the same transition, so in the same frame, as the commit of the operations;
                        // an erasure cascades over the document as the transaction's other changes leave it.
                        let all = document.withLock { document in
                            document.stage(changes)
                            // Removed models take their relations with them; erased ones what they own too.
                            let cascade =
                                document.relationsOfRemoved(changes)
                                + (erasures.isEmpty ? [] : document.erasure(of: erasures))
                            document.stage(cascade)
                            return changes + cascade
                        }
                        machine.stagedModels = true
                        if !all.isEmpty { machine.commitModels(all, snapshotBefore: before, now: now) }
                    }
                    let backlog = machine.forgetExpired(now: now, limit: max(operations.count, 1))
                    machine.handOverRemoved(to: &directory)
                    return AppliedCommit(records: records, nextSnapshot: machine.graph.nextSnapshot, backlog: backlog)
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
            let forgotten = transitionWithDirectory { machine, _ in machine.forgetExpired(now: now, limit: 256) }
            perform(forgotten)
            more = forgotten.value
        }
    }

    func cancel(_ id: UUID) async throws(RelayError) -> Bool {
        try await commandWithDirectory { (machine, directory, now) throws(RelayError) in
            try machine.cancel(id, in: directory, now: now)
        }
    }

    func purge(_ ids: [UUID]) async throws(RelayError) -> Int {
        try await commandWithDirectory { (machine, directory, now) throws(RelayError) in
            try machine.purge(ids, in: directory, now: now)
        }
    }

    func hold(_ id: UUID, until: Date?, context: String?) async throws(RelayError) {
        let deadline = until.map(clock.time(of:))
        try await commandWithDirectory { (machine, directory, now) throws(RelayError) in
            try machine.hold(id, until: deadline, context: context, in: directory, now: now)
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
        perform(transition { $0.register(executor, for: kind, now: now) })
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
        apply { $0.releaseSequences() }
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
        document.withLock { $0.restore(stored.models) }
        let clock = self.clock
        try await commandWithDirectory { machine, directory, now in
            machine.restore(stored, clock: clock, directory: &directory, now: now)
        }
    }

    // MARK: - Queries

    func read<Value: Sendable>(_ body: (borrowing PipelineStateMachine) -> Value) -> Value {
        state.withLock { body($0) }
    }

    /// A read that looks operations up by id.
    func readWithDirectory<Value: Sendable>(
        _ body: (borrowing PipelineStateMachine, borrowing OperationDirectory) -> Value
    ) -> Value {
        directory.withLock { directory in read { body($0, directory) } }
    }

    // MARK: - Events

    func subscribe(to operationID: UUID?, bufferSize: Int) throws(RelayError) -> CallEventStream {
        let subscription = EventSubscription(capacity: bufferSize)
        let subscribed = try transitionWithDirectory { (machine, directory) throws(RelayError) in
            try machine.subscribe(subscription, to: operationID, in: directory)
        }
        perform(subscribed)
        return stream(of: subscription, id: subscribed.value) { $0.unsubscribe($1, from: operationID) }
    }

    /// A stream of the document's changes to `collection`, or to all of them when it is `nil`.
    func subscribe(toCollection collection: String?, bufferSize: Int) -> CallEventStream {
        let subscription = EventSubscription(capacity: bufferSize)
        let subscribed = transition { $0.subscribe(subscription, toCollection: collection) }
        perform(subscribed)
        return stream(of: subscription, id: subscribed.value) { $0.unsubscribe($1, fromCollection: collection) }
    }

    /// The stream of a subscription, which unsubscribes when the stream and its iterator are gone.
    private func stream(
        of subscription: EventSubscription, id: UInt64,
        unsubscribe: @escaping @Sendable (inout PipelineStateMachine, UInt64) -> Void
    ) -> CallEventStream {
        let lifetime = SubscriptionLifetime(subscription: subscription) { [weak self] in
            guard id != 0, let self else { return }
            self.apply { unsubscribe(&$0, id) }
        }
        return CallEventStream(lifetime: lifetime)
    }

    func addSink(_ sink: any EventSink) {
        let subscribed = try? transitionWithDirectory { (machine, directory) throws(RelayError) in
            try machine.subscribe(sink, to: nil, in: directory)
        }
        if let subscribed { perform(subscribed) }
    }
}
