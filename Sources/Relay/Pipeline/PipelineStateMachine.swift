import Foundation

/// The pipeline's whole state: the operation graph, the sequences, the timers and the waiters.
///
/// A pure value: every event is a `mutating func` that changes the state, appends storage records to ``records``
/// and queues continuations to resume in ``effects``. ``PipelineCore`` runs each transition under its lock, hands the
/// records to storage, and performs the effects after releasing the lock. Nothing here suspends, resumes a
/// continuation, or calls user code.
///
/// Readiness is pushed: a finishing operation decrements its dependents' counts of unfinished dependencies, and an
/// operation whose count reaches zero enters its sequence's ready queue. No operation is ever found by scanning.
struct PipelineStateMachine: Sendable {
    struct Limits: Sendable {
        var retention: Int64
        var maximumPayloadSize: Int
        var metricsWindow: Int
    }

    enum Lifecycle: Sendable, Equatable {
        case idle
        case running
        /// No operation starts; running ones may finish until the deadline, then they are cancelled.
        case stopping(deadline: Int64)
        case stopped
    }

    enum NextJob: Sendable {
        case run(Job)
        /// The lane is offline and this worker probes until the destination answers.
        case probe(any CallExecutor, CallOperation)
        case park
        case exit

        /// Whether the step is to park.
        var parks: Bool {
            guard case .park = self else { return false }
            return true
        }

        /// The slot of the operation to run, if the step is to run one.
        var slot: Int32? {
            guard case .run(let job) = self else { return nil }
            return job.slot
        }
    }

    /// One attempt handed to a worker.
    struct Job: Sendable {
        let slot: Int32
        let record: OperationRecord
        let executor: any CallExecutor
        let attempt: Int
        /// Clock time; the worker makes the context's date after the lock is released.
        let startedAt: Int64
    }

    /// How an attempt ended, as the worker saw it.
    enum AttemptEnd: Sendable {
        case outcome(CallOutcome)
        /// An outcome with what the executor reported; boxed, so that the common case stays small to copy.
        indirect case reported(CallOutcome, AttemptReport)
        /// The executor threw while its task was not cancelled.
        case error(String)
        /// The executor threw while its task was cancelled: by request, or by shutdown.
        case interrupted(String)
        /// The worker claimed the operation in a batch and gave it back without running it.
        case returned
    }

    /// An attempt a worker ran, or gave back, and how it ended: what the worker reports for each operation of a batch.
    struct EndedAttempt: Sendable {
        let slot: Int32
        let end: AttemptEnd
    }

    enum TimerPlan: Sendable, Equatable {
        case sleep(until: Int64, generation: UInt64)
        case wait(generation: UInt64)
        case exit
    }

    struct TimerEntry: Comparable, Sendable {
        var deadline: Int64
        var slot: Int32
        var token: UInt32

        static func < (lhs: TimerEntry, rhs: TimerEntry) -> Bool { lhs.deadline < rhs.deadline }
        static func == (lhs: TimerEntry, rhs: TimerEntry) -> Bool { lhs.deadline == rhs.deadline }
    }

    let origin: Date
    let limits: Limits
    /// Whether storage keeps records; when it does not, none are built.
    let recording: Bool

    var slots = ChunkedTable<OperationSlot>()
    /// The ids of known operations and the free slot numbers.
    var directory = OperationDirectory()
    var lanes: [Lane] = []
    var laneIndex: [CallSequence.Name: Int32] = [:]
    var executors: [any CallExecutor] = []
    var executorIndex: [CallKind: Int32] = [:]
    var waitingForExecutor: [CallKind: [Int32]] = [:]
    var lastSnapshot: UInt64 = 0
    /// The store's recovery report, for ``DataPoint/recoveryReport`` and the event the start publishes.
    var recoveryReport: RecoveryReport?
    var nextOrder: UInt64 = 1
    var lifecycle = Lifecycle.idle
    var graceExpired = false
    var suspensionCount = 0
    var runningTotal = 0
    var timers = MinHeap<TimerEntry>()
    var deadlineTimers = MinHeap<TimerEntry>()
    var attemptDeadlines: [Int32: AttemptDeadline] = [:]
    var holds: [Int32: [String?: Int64]] = [:]
    /// When each operation whose attempt asked for a retry may run again.
    var retryTimes: [Int32: Int64] = [:]
    var workers: [UInt64: WorkerState] = [:]
    var doomedWorkers = 0
    var nextWorkerID: UInt64 = 1
    var hub = EventHub()
    var queueWaits: LatencyWindow
    var runTimes: LatencyWindow
    var retention: Retention
    /// The last attempt's figures of each operation whose executor reports; kept aside so other slots stay small.
    var reports: [Int32: AttemptFigures] = [:]
    /// Waits for the pipeline to be idle, and waits for it to be settled (see ``isIdle`` and ``isSettled``).
    var idleWaiters = Waiters<Void>()
    var settledWaiters = Waiters<Void>()
    var stopWaiters = Waiters<Void>()
    var timerWaiters = Waiters<Void>()
    var timerGeneration: UInt64 = 0
    var armedDeadline: Int64?
    var laneStartWaiters = Waiters<Void>()
    /// While set, dispatches are noted in ``heldDispatches`` and run once each by ``releaseDispatch()``.
    var holdingDispatch = false
    var heldDispatches: [Int32] = []
    var records: [StorageRecord] = []
    /// The ticket of the last records handed to storage: a transition that records nothing still waits for it before
    /// its events reach subscribers.
    var lastTicket = StorageTicket.durable
    var effects = PipelineEffects()
    var generator = SystemRandomNumberGenerator()

    init(origin: Date, limits: Limits, recording: Bool = true) {
        self.origin = origin
        self.limits = limits
        self.recording = recording
        retention = Retention(window: limits.retention)
        queueWaits = LatencyWindow(capacity: limits.metricsWindow)
        runTimes = LatencyWindow(capacity: limits.metricsWindow)
    }

    /// The slot of a known operation.
    func lookup(_ id: UUID) -> Int32? {
        directory.slot(of: id)
    }

    /// A finished operation's result.
    func result(of slot: Int32) -> CallResult? {
        guard slots[Int(slot)].phase == .finished else { return nil }
        return slots[Int(slot)].result
    }

    /// Hands an outcome to the operation's handles once the transition is durable, whatever the store.
    mutating func settle(_ record: OperationRecord, _ outcome: Result<CallResult, RelayError>) {
        effects.settlements.append((record, outcome))
    }

    func date(_ time: Int64) -> Date {
        origin.addingTimeInterval(Double(time) / 1e9)
    }

    mutating func takeEffects() -> PipelineEffects {
        if !(idleWaiters.isEmpty && settledWaiters.isEmpty) && isSettled {
            effects.signals += settledWaiters.takeAll()
            if isIdle { effects.signals += idleWaiters.takeAll() }
        }
        guard !effects.isEmpty else { return PipelineEffects() }
        var taken = PipelineEffects()
        swap(&taken, &effects)
        return taken
    }

    // MARK: - Events

    mutating func publish(_ kind: CallEvent.Kind, operation: UUID?, sequence: CallSequence.Name?, now: Int64) {
        guard hub.hasSubscribers(for: operation) else { return }
        hub.publish(operationID: operation, sequenceName: sequence, kind: kind, date: date(now))
    }

    mutating func subscribe(_ sink: any EventSink, to operationID: UUID?) throws(RelayError) -> UInt64 {
        if let operationID {
            guard let slot = lookup(operationID) else {
                throw RelayError(.unknownOperation, "no operation \(operationID) is known", operationIDs: [operationID])
            }
            if slots[Int(slot)].phase == .finished || lifecycle == .stopped {
                hub.close(sink)
                return 0
            }
        } else if lifecycle == .stopped {
            hub.close(sink)
            return 0
        }
        return hub.subscribe(sink, to: operationID)
    }

    mutating func unsubscribe(_ id: UInt64, from operationID: UUID?) {
        hub.unsubscribe(id, from: operationID)
    }

    // MARK: - Sequences

    mutating func upsertLane(
        _ name: CallSequence.Name,
        sequence: CallSequence,
        bunchSize: Int,
        algorithm: CallSequence.Algorithm,
        addingSuspensions: Int,
        now: Int64
    ) {
        let laneNumber: Int32
        if let existing = laneIndex[name] {
            laneNumber = existing
            let wasRegistered = lanes[Int(existing)].isRegistered
            if !wasRegistered { lanes[Int(existing)].sequence = sequence }
            lanes[Int(existing)].bunchSize = bunchSize
            setAlgorithm(algorithm, lane: existing, now: now)
            if !wasRegistered { effects.signals += laneStartWaiters.takeAll() }
        } else {
            laneNumber = Int32(lanes.count)
            lanes.append(Lane(name: name, sequence: sequence, bunchSize: bunchSize, algorithm: algorithm))
            laneIndex[name] = laneNumber
            effects.signals += laneStartWaiters.takeAll()
        }
        if recording { records.append(.sequenceConfigured(name, bunchSize: bunchSize, algorithm: algorithm)) }
        for _ in 0..<max(0, addingSuspensions) {
            _ = suspend(lane: laneNumber, reason: "suspended before it was added", now: now)
        }
        dispatch(laneNumber)
    }

    /// Gives a lane its actor without changing a configuration restored from storage; creates it if needed.
    mutating func adoptLane(_ name: CallSequence.Name, sequence: CallSequence) {
        if let existing = laneIndex[name] {
            guard lanes[Int(existing)].sequence == nil else { return }
            lanes[Int(existing)].sequence = sequence
            effects.signals += laneStartWaiters.takeAll()
            dispatch(existing)
            return
        }
        laneIndex[name] = Int32(lanes.count)
        lanes.append(Lane(name: name, sequence: sequence, bunchSize: 1, algorithm: .flat))
        if recording { records.append(.sequenceConfigured(name, bunchSize: 1, algorithm: .flat)) }
        effects.signals += laneStartWaiters.takeAll()
    }

    /// A lane known only from stored operations, waiting for its sequence to be upserted.
    mutating func placeholderLane(_ name: CallSequence.Name) -> Int32 {
        if let existing = laneIndex[name] { return existing }
        let number = Int32(lanes.count)
        lanes.append(Lane(name: name, sequence: nil, bunchSize: 1, algorithm: .flat))
        laneIndex[name] = number
        return number
    }

    mutating func setBunchSize(_ size: Int, lane name: CallSequence.Name, now: Int64) throws(RelayError) {
        guard size >= 1 else {
            throw RelayError(.invalidBunchSize, "bunch size \(size) for sequence \(name) is below 1")
        }
        let lane = try registeredLane(name)
        // Claimed operations that have not begun would otherwise start beyond a lowered size.
        if size < lanes[Int(lane)].bunchSize { interruptBatches(lane: lane) }
        lanes[Int(lane)].bunchSize = size
        if recording {
            records.append(.sequenceConfigured(name, bunchSize: size, algorithm: lanes[Int(lane)].algorithm))
        }
        dispatch(lane)
    }

    mutating func setAlgorithm(_ algorithm: CallSequence.Algorithm, lane name: CallSequence.Name, now: Int64)
        throws(RelayError)
    {
        let lane = try registeredLane(name)
        setAlgorithm(algorithm, lane: lane, now: now)
        if recording {
            records.append(.sequenceConfigured(name, bunchSize: lanes[Int(lane)].bunchSize, algorithm: algorithm))
        }
    }

    func registeredLane(_ name: CallSequence.Name) throws(RelayError) -> Int32 {
        guard let lane = laneIndex[name], lanes[Int(lane)].isRegistered else {
            throw RelayError(.unknownSequence, "no sequence named \(name) is registered")
        }
        return lane
    }

    private mutating func setAlgorithm(_ algorithm: CallSequence.Algorithm, lane: Int32, now: Int64) {
        let l = Int(lane)
        guard lanes[l].algorithm != algorithm else { return }
        lanes[l].algorithm = algorithm
        switch algorithm {
        case .flat:
            let gated = lanes[l].gated.values.flatMap { $0 }
            lanes[l].gated.removeAll()
            lanes[l].resetCommitGraph()
            for slot in gated where slots[Int(slot)].gated {
                slots[Int(slot)].gated = false
                reevaluate(slot, now: now)
            }
        case .commitGraph:
            // A rare, explicit change, so one scan is fine: rebuild the per-commit accounting from the lane's
            // unfinished operations, and send ready operations of later commits back to wait for earlier ones.
            lanes[l].resetCommitGraph()
            let open = slots.indices
                .filter { slots[$0].lane == lane && slots[$0].phase != .free && slots[$0].phase != .finished }
                .sorted { slots[$0].order < slots[$1].order }
            for s in open { lanes[l].openCommit(slots[s].snapshot) }
            let oldest = lanes[l].oldestOpenCommit
            for s in open where slots[s].phase == .ready && slots[s].snapshot != oldest {
                slots[s].phase = .pending
                slots[s].token &+= 1
                slots[s].gated = true
                lanes[l].readyCount -= 1
                lanes[l].gated[slots[s].snapshot, default: []].append(Int32(s))
            }
        }
    }

    // MARK: - Executors

    mutating func register(_ executor: any CallExecutor, for kind: CallKind, now: Int64) {
        if let existing = executorIndex[kind] {
            executors[Int(existing)] = executor
            return
        }
        let number = Int32(executors.count)
        executors.append(executor)
        executorIndex[kind] = number
        guard let waiting = waitingForExecutor.removeValue(forKey: kind) else { return }
        for slot in waiting where slots[Int(slot)].executor < 0 {
            slots[Int(slot)].executor = number
            reevaluate(slot, now: now)
        }
    }

    // MARK: - Readiness

    /// Moves a pending operation as far as it can go: to a timer, a commit gate, or its ready queue.
    mutating func reevaluate(_ slot: Int32, now: Int64) {
        let s = Int(slot)
        guard slots[s].phase == .pending, slots[s].unfinishedDependencies == 0, !slots[s].gated else { return }
        let notBefore = notBefore(slot)
        if notBefore > now {
            scheduleTimer(slot, at: notBefore)
            return
        }
        if slots[s].executor < 0 {
            let kind = slots[s].record.operation.kind
            guard let executor = executorIndex[kind] else {
                waitingForExecutor[kind, default: []].append(slot)
                return
            }
            slots[s].executor = executor
        }
        let lane = slots[s].lane
        let l = Int(lane)
        if lanes[l].algorithm == .commitGraph, let oldest = lanes[l].oldestOpenCommit, slots[s].snapshot != oldest {
            slots[s].gated = true
            lanes[l].gated[slots[s].snapshot, default: []].append(slot)
            return
        }
        slots[s].phase = .ready
        slots[s].token &+= 1
        lanes[l].ready.push(
            .init(order: slots[s].order, slot: slot, token: slots[s].token),
            priority: slots[s].record.operation.priority
        )
        lanes[l].readyCount += 1
        dispatch(lane)
    }

    /// Wakes idle workers, or asks for new ones, for ready work that the bunch size leaves room for.
    mutating func dispatch(_ lane: Int32) {
        if holdingDispatch {
            if !lanes[Int(lane)].dispatchHeld {
                lanes[Int(lane)].dispatchHeld = true
                heldDispatches.append(lane)
            }
            return
        }
        guard lifecycle == .running, suspensionCount == 0 else { return }
        let l = Int(lane)
        guard lanes[l].isRegistered, lanes[l].suspensionCount == 0, !lanes[l].isOffline else { return }
        var demand = lanes[l].readyCount - lanes[l].wakesInFlight
        var capacity = lanes[l].bunchSize - lanes[l].running - lanes[l].wakesInFlight
        while demand > 0 && capacity > 0 {
            if let idle = lanes[l].idleWorkers.takeLast() {
                effects.workerWakes.append((idle, .work))
            } else if lanes[l].workers < lanes[l].bunchSize {
                lanes[l].workers += 1
                lanes[l].pendingSpawns += 1
                for spawner in lanes[l].spawnWaiters.takeAll() { effects.spawnWakes.append((spawner, true)) }
            } else {
                break
            }
            lanes[l].wakesInFlight += 1
            demand -= 1
            capacity -= 1
        }
    }

    /// Holds dispatches until ``releaseDispatch()``: a step that readies many operations, or a worker about to take
    /// one of them itself, then dispatches each lane once, at the end, rather than once per operation.
    mutating func holdDispatch() {
        holdingDispatch = true
    }

    mutating func releaseDispatch() {
        holdingDispatch = false
        guard !heldDispatches.isEmpty else { return }
        for lane in heldDispatches {
            lanes[Int(lane)].dispatchHeld = false
            dispatch(lane)
        }
        heldDispatches.removeAll(keepingCapacity: true)
    }

    mutating func dispatchAll() {
        for lane in lanes.indices { dispatch(Int32(lane)) }
    }

    /// Nothing more can start without outside input, though operations may still run.
    var isSettled: Bool {
        let starting = lifecycle == .running && suspensionCount == 0
        return !lanes.contains { lane in
            guard lane.wakesInFlight == 0 else { return true }
            guard starting, lane.isRegistered, lane.suspensionCount == 0, !lane.isOffline else { return false }
            return lane.readyCount > 0 && lane.running < lane.bunchSize
        }
    }

    /// Nothing runs and nothing more can start without outside input.
    var isIdle: Bool { runningTotal == 0 && isSettled }

    // MARK: - Timers

    mutating func scheduleTimer(_ slot: Int32, at deadline: Int64) {
        slots[Int(slot)].token &+= 1
        timers.push(.init(deadline: deadline, slot: slot, token: slots[Int(slot)].token))
        if armedDeadline.map({ deadline < $0 }) ?? true { rearmTimer() }
    }

    mutating func rearmTimer() {
        timerGeneration &+= 1
        effects.signals += timerWaiters.takeAll()
    }

    mutating func timerPlan() -> TimerPlan {
        switch lifecycle {
        case .stopped:
            return .exit
        case .stopping where workers.isEmpty:
            return .exit
        default:
            break
        }
        var deadline = timers.min?.deadline
        if let attemptDeadline = nextAttemptDeadline() { deadline = min(deadline ?? attemptDeadline, attemptDeadline) }
        if case .stopping(let grace) = lifecycle, !graceExpired {
            deadline = min(deadline ?? grace, grace)
        }
        if let sweep = retention.nextSweep { deadline = min(deadline ?? sweep, sweep) }
        armedDeadline = deadline
        if let deadline { return .sleep(until: deadline, generation: timerGeneration) }
        return .wait(generation: timerGeneration)
    }

    /// Parks the timer loop's wait for a new plan, or returns `true` when the plan is stale already.
    mutating func waitForRearm(generation: UInt64, id: UInt64, _ continuation: CheckedContinuation<Void, Never>) -> Bool
    {
        guard generation == timerGeneration, lifecycle != .stopped else { return true }
        return !timerWaiters.park(id, continuation)
    }

    /// Fires every timer that is due, and returns whether the sweep of finished operations is due too.
    @discardableResult
    mutating func fireTimers(now: Int64) -> Bool {
        armedDeadline = nil
        while let top = timers.min, top.deadline <= now {
            _ = timers.popMin()
            let s = Int(top.slot)
            guard slots[s].phase == .pending, slots[s].token == top.token else { continue }
            reevaluate(top.slot, now: now)
        }
        fireAttemptDeadlines(now: now)
        if case .stopping(let grace) = lifecycle, !graceExpired, grace <= now {
            graceExpired = true
            for worker in Array(workers.keys) { signalCancel(worker) }
        }
        return retention.nextSweep.map { $0 <= now } ?? false
    }

    // MARK: - Retention

    /// Forgets up to `limit` operations whose retention window has passed, oldest first; returns whether more remain.
    ///
    /// The limit keeps each critical section short however large the backlog.
    @discardableResult
    mutating func evictExpired(now: Int64, limit: Int = 256) -> Bool {
        let (due, more) = retention.takeDue(now: now, limit: limit)
        for slot in due where slots[Int(slot)].phase == .finished { forget(slot) }
        return more
    }

    /// Keeps an operation that just finished until its retention window passes, and wakes the timer loop when the
    /// operation is the only one kept, so that a DataPoint that goes quiet still forgets it.
    ///
    /// With a window of zero, the operation is forgotten at once, by whoever finished it, while its slot is in cache.
    mutating func retain(_ slot: Int32, finishedAt now: Int64) {
        guard !retention.forgetsAtOnce else {
            forget(slot)
            return
        }
        guard retention.keep(slot, finishedAt: now), let sweep = retention.nextSweep,
            armedDeadline.map({ sweep < $0 }) ?? true
        else { return }
        rearmTimer()
    }

    /// Forgets a finished operation whose window has passed, unless a dependency still lists it; that dependency's
    /// end forgets it then.
    private mutating func forget(_ slot: Int32) {
        guard slots[Int(slot)].unfinishedDependencies == 0 else {
            slots[Int(slot)].evictionDeferred = true
            return
        }
        effects.released.append(vacate(slot))
        directory.release(slot)
    }

    /// Makes a slot reusable and hands back its record; the next occupant overwrites every other field.
    @discardableResult
    mutating func vacate(_ slot: Int32) -> OperationRecord {
        if !holds.isEmpty { holds[slot] = nil }
        if !retryTimes.isEmpty { retryTimes[slot] = nil }
        if !reports.isEmpty { reports[slot] = nil }
        return slots[Int(slot)].vacate()
    }

    /// Gives a new operation the slot the directory took for it, in place when the slot was used before.
    mutating func occupy(
        _ slot: Int32,
        record: OperationRecord,
        lane: Int32,
        executor: Int32,
        order: UInt64,
        snapshot: UInt64,
        enqueuedAt: Int64
    ) {
        guard Int(slot) == slots.count else {
            slots[Int(slot)].occupy(
                record: record, lane: lane, executor: executor, order: order, snapshot: snapshot,
                enqueuedAt: enqueuedAt)
            return
        }
        slots.append(
            OperationSlot(
                record: record, lane: lane, executor: executor, order: order, snapshot: snapshot,
                enqueuedAt: enqueuedAt))
    }

    // MARK: - Suspension

    /// Increments a suspension count and returns the new count.
    ///
    /// A `nil` lane is the whole DataPoint.
    mutating func suspend(lane: Int32?, reason: String, now: Int64) -> Int {
        let count: Int
        if let lane {
            lanes[Int(lane)].suspensionCount += 1
            count = lanes[Int(lane)].suspensionCount
        } else {
            suspensionCount += 1
            count = suspensionCount
        }
        interruptBatches(lane: lane)
        let name = lane.map { lanes[Int($0)].name }
        if recording { records.append(.suspensionChanged(name, count: count)) }
        if count == 1 { publish(.suspended(reason: reason), operation: nil, sequence: name, now: now) }
        return count
    }

    /// Decrements a suspension count, never below zero, and returns the new count.
    ///
    /// A `nil` lane is the whole DataPoint.
    mutating func resume(lane: Int32?, reason: String, now: Int64) -> Int {
        let count: Int
        if let lane {
            guard lanes[Int(lane)].suspensionCount > 0 else { return 0 }
            lanes[Int(lane)].suspensionCount -= 1
            count = lanes[Int(lane)].suspensionCount
        } else {
            guard suspensionCount > 0 else { return 0 }
            suspensionCount -= 1
            count = suspensionCount
        }
        let name = lane.map { lanes[Int($0)].name }
        if recording { records.append(.suspensionChanged(name, count: count)) }
        guard count == 0 else { return count }
        publish(.resumed(reason: reason), operation: nil, sequence: name, now: now)
        if let lane { dispatch(lane) } else { dispatchAll() }
        return 0
    }

    // MARK: - Holds

    /// The time before which an operation must not start: the end of its latest hold or its retry delay.
    @inline(__always)
    func notBefore(_ slot: Int32) -> Int64 {
        guard slots[Int(slot)].mayWaitForTime else { return OperationSlot.never }
        return max(holdUntil(slot), retryTimes[slot] ?? OperationSlot.never)
    }

    /// The end of an operation's latest hold.
    func holdUntil(_ slot: Int32) -> Int64 {
        holds[slot]?.values.max() ?? OperationSlot.never
    }

    mutating func hold(_ id: UUID, until: Int64?, context: String?, now: Int64) throws(RelayError) {
        guard let slot = lookup(id) else {
            throw RelayError(.unknownOperation, "cannot hold \(id): no such operation is known", operationIDs: [id])
        }
        let s = Int(slot)
        guard slots[s].phase != .finished else {
            throw RelayError(.operationFinished, "cannot hold \(id): it has finished", operationIDs: [id])
        }
        var contexts = holds[slot] ?? [:]
        contexts[context] = until
        holds[slot] = contexts.isEmpty ? nil : contexts
        slots[s].mayWaitForTime = !contexts.isEmpty || retryTimes[slot] != nil
        if recording { records.append(.held(id, until: until.map { date($0) }, context: context)) }
        publish(
            .held(until: until.map { date($0) }, context: context),
            operation: id,
            sequence: slots[s].record.operation.sequenceName,
            now: now
        )
        if slots[s].phase == .ready && holdUntil(slot) > now {
            slots[s].phase = .pending
            slots[s].token &+= 1
            lanes[Int(slots[s].lane)].readyCount -= 1
        }
        reevaluate(slot, now: now)
    }

    // MARK: - Cancellation

    /// Cancels a pending operation at once, or asks a running one to stop.
    ///
    /// Returns whether anything changed.
    mutating func cancel(_ id: UUID, now: Int64) throws(RelayError) -> Bool {
        guard let slot = lookup(id) else {
            throw RelayError(.unknownOperation, "cannot cancel \(id): no such operation is known", operationIDs: [id])
        }
        let s = Int(slot)
        switch slots[s].phase {
        case .finished, .free:
            return false
        case .running:
            guard !slots[s].cancelRequested else { return false }
            slots[s].cancelRequested = true
            cancelRunning(slot)
            return true
        case .pending, .ready:
            finishTerminal(slot, .cancelled(.requested), now: now)
            return true
        }
    }

    /// Cancels a running operation's task, unless it is a claimed operation of a batch that has not begun: the worker
    /// then gives it back, and the operation the worker runs meanwhile goes on.
    private mutating func cancelRunning(_ slot: Int32) {
        let worker = slots[Int(slot)].worker
        let index = slots[Int(slot)].batchIndex
        guard index != OperationSlot.unbatched, let batch = workers[worker]?.batch else {
            signalCancel(worker)
            return
        }
        if batch.stop() == Int(index) { signalCancel(worker) }
    }

    /// Asks the workers of `lane`, or of every lane, to start none of the operations they claimed and have not begun.
    mutating func interruptBatches(lane: Int32?) {
        // A worker without a batch ignores the request, and its next batch starts with a fresh one.
        for state in workers.values where lane == nil || state.lane == lane {
            state.batch.stop()
        }
    }

    /// Marks a worker so it takes no further operation, stops its batch, and cancels its task through its cancel
    /// signal.
    mutating func signalCancel(_ worker: UInt64) {
        guard var state = workers[worker], !state.doomed else { return }
        state.batch.stop()
        state.doomed = true
        doomedWorkers += 1
        state.cancelSignalled = true
        effects.signals += state.cancelWaiters.takeAll()
        workers[worker] = state
    }

    /// Parks a worker's wait for its cancel signal, or returns `true` when the signal was sent already.
    mutating func waitForCancelSignal(_ worker: UInt64, id: UInt64, _ continuation: CheckedContinuation<Void, Never>)
        -> Bool
    {
        guard !(workers[worker]?.cancelSignalled ?? true) else { return true }
        return !workers[worker]!.cancelWaiters.park(id, continuation)
    }
}
