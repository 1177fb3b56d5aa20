import Foundation

/// The pipeline's state: the lifecycle of each operation and of the DataPoint, coordinating the parts that own the
/// rest.
///
/// The parts: the ``OperationGraph`` (operations, ids and dependency edges), the ``Lane`` of each sequence (its ready
/// queue, workers and offline destinations), the ``Timers`` (holds, retry times, attempt deadlines), ``Retention``
/// (finished operations kept for re-attachment) and the ``EventHub`` (subscribers).
///
/// A pure value: every event is a `mutating func` that returns its answer and writes what the shell must do into the
/// ``PipelineActions`` it is given (storage records, events, model changes, continuations to resume); nothing the shell
/// must do is kept here. ``PipelineCore`` runs each event under its lock, through ``PipelineCore/transition(_:)``, and
/// ends it with ``finish(_:now:)``. Nothing here suspends, resumes a continuation, or calls user code.
///
/// Readiness is pushed: a finishing operation decrements its dependents' counts of unfinished dependencies, and an
/// operation whose count reaches zero enters its sequence's ready queue. No operation is ever found by scanning.
struct PipelineStateMachine: Sendable {
    struct Limits: Sendable {
        var retention: RetentionPolicy
        var maximumPayloadSize: Int
        var metricsWindow: Int
        var maximumPending = Int.max
        var maximumPendingBytes = Int.max
        var eventHistorySize = 0
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
        /// A destination of the lane is offline and its probe is due: the worker asks the executor whether the
        /// destination answers, sending the operation, and reports the answer.
        case probe(any CallExecutor, CallOperation, destination: String)
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
        /// An outcome with the model changes the attempt staged, committed with it if it completes or skips, and what
        /// the executor reported, if anything.
        indirect case staged(CallOutcome, AttemptReport?, [ModelChange])
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

    let origin: Date
    let limits: Limits
    /// Whether storage keeps records; when it does not, none are built.
    let recording: Bool
    /// Whether observers hear of finished operations; when none do, nothing is built for them.
    let observing: Bool
    /// Whether the store is shared by a fleet, which gives an operation back to every process while its retry waits.
    let sharing: Bool

    var graph = OperationGraph()
    var lanes: [Lane] = []
    var laneIndex: [CallSequence.Name: Int32] = [:]
    var executors: [any CallExecutor] = []
    var executorIndex: [CallKind: Int32] = [:]
    var waitingForExecutor: [CallKind: [Int32]] = [:]
    /// The store's recovery report, for ``DataPoint/recoveryReport`` and the event the start publishes.
    var recoveryReport: RecoveryReport?
    var lifecycle = Lifecycle.idle
    var graceExpired = false
    var suspensionCount = 0
    /// The failure of a write to the store, after which nothing more starts: what runs could not be recorded.
    var storeFailure: RelayError?
    /// What the store threw as it closed, which ``DataPoint/run()`` and ``DataPoint/shutdown(gracePeriod:)`` report.
    var closeFailure: RelayError?
    var runningTotal = 0
    /// The operations not finished yet, pending or running, and their payloads' bytes, which the limits bound.
    var unfinishedCount = 0
    var unfinishedBytes = 0
    var timers = Timers()
    var workers: [UInt64: WorkerState] = [:]
    var doomedWorkers = 0
    var nextWorkerID: UInt64 = 1
    var hub = EventHub()
    /// The document's models, relations and key-values: changed in the same events as the operations whose commits
    /// and completions carry them, and read through the core's read accessor.
    var document = Document()
    var queueWaits: LatencyWindow
    var runTimes: LatencyWindow
    var retention: Retention
    /// The last attempt's figures of each operation whose executor reports; kept aside so other slots stay small.
    var reports: [Int32: AttemptFigures] = [:]
    /// The failure of the last attempt that asked for a retry, by slot; kept aside, since few operations have one.
    var lastFailures: [Int32: CallFailure] = [:]
    /// Running operations whose claims a shared store lost, which leave the graph when their attempts end.
    var abandoned: Set<Int32> = []
    /// Operations whose commit to a shared store has not answered yet: their enqueued events are announced once, by
    /// the commit's answer or by a claim of them here, whichever comes first.
    var enqueuesInFlight: Set<UUID> = []
    /// While a stream of every event is open, the operations announced here as enqueued that no claim has started
    /// yet, and those a claim here announced before the store's event log did: each enqueued event is announced once,
    /// before the operation's start (see `PipelineStateMachine+Sharing.swift`).
    var enqueueAnnouncements = SharedEnqueueAnnouncements()
    /// On a shared store, the version of each model, key-value and relation the document holds or removed.
    var modelVersions = SharedModelVersions()
    /// Waits for the pipeline to be idle, and waits for it to be settled (see ``isIdle`` and ``isSettled``).
    var idleWaiters = Waiters<Void>()
    var settledWaiters = Waiters<Void>()
    /// The sleeps on a manual clock of running operations, and the waits that end when they stall the pipeline.
    var clockSleeps = ClockSleeps()
    var stopWaiters = Waiters<Void>()
    /// Waits for the DataPoint to start, from callers that need it running, such as ``DataPoint/execute(_:)``.
    var startWaiters = Waiters<Void>()
    var laneStartWaiters = Waiters<Void>()
    /// While set, dispatches are noted in ``heldDispatches`` and run once each by ``releaseDispatch()``.
    var holdingDispatch = false
    var heldDispatches: [Int32] = []
    var generator = SystemRandomNumberGenerator()

    init(origin: Date, limits: Limits, recording: Bool = true, observing: Bool = false, sharing: Bool = false) {
        self.origin = origin
        self.limits = limits
        self.recording = recording
        self.observing = observing
        self.sharing = sharing
        document = Document(durableAtOnce: !recording)
        if limits.eventHistorySize > 0 { hub.keepHistory(limits.eventHistorySize) }
        retention = Retention(limits.retention)
        queueWaits = LatencyWindow(capacity: limits.metricsWindow)
        runTimes = LatencyWindow(capacity: limits.metricsWindow)
    }

    /// The slot of a known operation.
    func lookup(_ id: UUID, in directory: OperationDirectory) -> Int32? {
        graph.slot(of: id, in: directory)
    }

    /// A finished operation's result.
    func result(of slot: Int32) -> CallResult? {
        guard graph[slot].phase == .finished else { return nil }
        return graph[slot].result
    }

    /// Hands an outcome to the operation's handles once the transition is durable, whatever the store.
    func settle(
        _ record: OperationRecord, _ outcome: Result<CallResult, RelayError>, into actions: inout PipelineActions
    ) {
        actions.settlements.append((record, outcome))
    }

    func date(_ time: Int64) -> Date {
        origin.addingTimeInterval(Double(time) / 1e9)
    }

    /// Ends a transition that holds the directory: vacates the operations forgotten since the last one and hands
    /// their slots to the directory (see ``OperationDirectory``).
    mutating func handOverRemoved(to directory: inout OperationDirectory, into actions: inout PipelineActions) {
        graph.vacateRemoved(releasing: &actions.released, into: &directory)
    }

    /// Ends every event: gathers its events into one step per subscriber, and ends the waits for the pipeline to be
    /// idle or settled that it satisfied.
    ///
    /// `now` is read only when such a wait may end.
    mutating func finish(_ actions: inout PipelineActions, now: @autoclosure () -> Int64) {
        hub.flush(&actions.events)
        if !(idleWaiters.isEmpty && settledWaiters.isEmpty && clockSleeps.waiters.isEmpty) {
            let now = now()
            guard isSettled(now: now) else { return }
            actions.signals += settledWaiters.takeAll()
            if runningTotal == 0 { actions.signals += idleWaiters.takeAll() }
            if !clockSleeps.waiters.isEmpty { endStallWaits(now: now, into: &actions) }
        }
    }

    // MARK: - Events

    mutating func publish(
        _ kind: CallEvent.Kind, operation: UUID?, sequence: CallSequence.Name?, now: Int64,
        into actions: inout PipelineActions
    ) {
        guard hub.hasSubscribers(for: operation) else { return }
        hub.publish(operationID: operation, sequenceName: sequence, kind: kind, date: date(now), into: &actions.events)
    }

    /// Subscribes `sink` to one operation's events, or to every event when `operationID` is `nil`.
    ///
    /// `elsewhere` says what a shared store's handles here know of an operation the graph does not hold: one that
    /// another process runs is followed through the events the store publishes; one that ended gets a stream that
    /// has ended.
    mutating func subscribe(
        _ sink: any EventSink,
        to operationID: UUID?,
        elsewhere: RemoteOutcomes.Standing = .unknown,
        in directory: OperationDirectory,
        into actions: inout PipelineActions
    ) throws(RelayError) -> UInt64 {
        if let operationID {
            guard let slot = lookup(operationID, in: directory) else {
                switch elsewhere {
                case .unknown:
                    throw RelayError(
                        .unknownOperation, "no operation \(operationID) is known", operationIDs: [operationID])
                case .ended:
                    hub.close(sink, in: &actions.events)
                    return 0
                case .awaited:
                    if hasStopped(for: sink) {
                        hub.close(sink, in: &actions.events)
                        return 0
                    }
                    return hub.subscribe(sink, to: operationID)
                }
            }
            if graph[slot].phase == .finished || hasStopped(for: sink) {
                hub.close(sink, in: &actions.events)
                return 0
            }
        } else if hasStopped(for: sink) {
            hub.close(sink, in: &actions.events)
            return 0
        }
        return hub.subscribe(sink, to: operationID)
    }

    /// Whether the DataPoint has gone as far toward stopping as `sink` lasts.
    private func hasStopped(for sink: any EventSink) -> Bool {
        switch lifecycle {
        case .idle, .running: false
        case .stopping: sink.endsWhenStopping
        case .stopped: true
        }
    }

    mutating func unsubscribe(_ id: UInt64, from operationID: UUID?) {
        hub.unsubscribe(id, from: operationID)
    }

    /// Follows the document's changes to `collection`, or to all of them when it is `nil`.
    mutating func subscribe(
        _ sink: any EventSink, toCollection collection: String?, into actions: inout PipelineActions
    ) -> UInt64 {
        guard !hasStopped(for: sink) else {
            hub.close(sink, in: &actions.events)
            return 0
        }
        return hub.subscribe(sink, toCollection: collection)
    }

    /// Subscribes `sink` to every event from now on, after what it missed since `sequenceNumber`.
    mutating func subscribe(
        _ sink: any EventSink, after sequenceNumber: UInt64, now: Int64, into actions: inout PipelineActions
    ) -> UInt64 {
        guard !hasStopped(for: sink) else {
            hub.close(sink, in: &actions.events)
            return 0
        }
        return hub.subscribe(sink, after: sequenceNumber, date: date(now), into: &actions.events)
    }

    mutating func unsubscribe(_ id: UInt64, fromCollection collection: String?) {
        hub.unsubscribe(id, fromCollection: collection)
    }

}
