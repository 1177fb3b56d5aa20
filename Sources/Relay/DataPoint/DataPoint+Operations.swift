import Foundation

extension DataPoint {
    // MARK: - Executors and sequences

    /// Registers the executor that runs operations of a kind, replacing any earlier one.
    ///
    /// Register executors before enqueueing operations of their kind. Operations restored from storage wait, visible
    /// in their status, until their kind is registered; but once the DataPoint runs, those of a kind that already has
    /// an executor (``CallKind/http`` has the built-in one) may start before this call. An executor that restored
    /// operations need belongs in the `executors` the DataPoint opens with
    /// (``init(storage:clock:configuration:executors:)``).
    ///
    /// - Parameters:
    ///   - executor: The executor.
    ///   - kind: The kind it runs.
    public nonisolated func register(_ executor: some CallExecutor, for kind: CallKind) {
        core.register(executor, for: kind)
    }

    /// Adds a sequence, or reconfigures the one with the same name.
    ///
    /// The sequence's bunch size and algorithm apply at once; suspensions it gathered before being added carry over.
    ///
    /// ```swift
    /// try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
    /// ```
    ///
    /// - Parameter sequence: The sequence.
    /// - Returns: The same sequence, now bound to this DataPoint.
    /// On a shared store the fleet registers the sequence first: one it could not register is not registered here
    /// either, and the call throws.
    ///
    /// - Throws: ``RelayError`` with code ``RelayError/Code/sequenceAttached`` when it belongs to another DataPoint;
    ///   on a shared store, ``RelayError/Code/storageFailure`` when the store did not register it.
    @discardableResult
    public nonisolated func upsertCallSequence(_ sequence: CallSequence) async throws -> CallSequence {
        let configuration = try await sequence.configuration(for: core)
        try await core.configureShared(
            sequence.name, bunchSize: configuration.bunchSize, algorithm: configuration.algorithm, replacing: true)
        let suspensions = try await sequence.attach(to: core)
        try await core.upsertLane(
            sequence.name,
            sequence: sequence,
            bunchSize: configuration.bunchSize,
            algorithm: configuration.algorithm,
            addingSuspensions: suspensions
        )
        return sequence
    }

    /// The sequence with this name, if it is registered.
    ///
    /// - Parameter name: The sequence's name.
    /// - Returns: The sequence that runs the lane.
    public nonisolated func sequence(named name: CallSequence.Name) -> CallSequence? {
        core.read { $0.sequence(named: name) }
    }

    // MARK: - Enqueueing

    /// Enqueues one operation as one commit.
    ///
    /// - Parameter operation: The operation.
    /// - Returns: Its handle; the existing one if the id is already known with the same content.
    /// - Throws: ``RelayError`` for bad input (see ``enqueue(_:)-([CallOperation])``); nothing is enqueued then.
    @discardableResult
    public nonisolated func enqueue(_ operation: CallOperation) async throws -> CallHandle {
        let records = try await core.enqueue([operation])
        return CallHandle(record: records[0], core: core)
    }

    /// Enqueues operations as one atomic commit: all of them, or none.
    ///
    /// The commit gets the next snapshot number. Operations may depend on each other and on known operations in any
    /// sequence. The call returns once the commit is durable under the storage's policy.
    ///
    /// ```swift
    /// let upload = CallOperation(kind: "upload", sequenceName: .uploads)
    /// let notify = CallOperation(kind: "notify", dependencies: [upload.id])
    /// let handles = try await point.enqueue([upload, notify])
    /// ```
    ///
    /// - Parameter operations: The operations, in call order.
    /// - Returns: Their handles, in the same order.
    /// - Throws: ``RelayError`` with codes ``RelayError/Code/unknownSequence``, ``RelayError/Code/unknownKind``,
    ///   ``RelayError/Code/unknownDependency``, ``RelayError/Code/dependencyCycle``,
    ///   ``RelayError/Code/conflictingOperation``, ``RelayError/Code/payloadTooLarge``,
    ///   ``RelayError/Code/invalidRetryPolicy`` or ``RelayError/Code/shutdown``. A rejected commit changes nothing.
    @discardableResult
    public nonisolated func enqueue(_ operations: [CallOperation]) async throws -> [CallHandle] {
        return try await core.enqueue(operations).map { CallHandle(record: $0, core: core) }
    }

    /// Enqueues an operation and waits for its result.
    ///
    /// - Important: The operation runs on its sequence, ``CallSequence/Name/data`` unless it names another, and `data`
    ///   runs one operation at a time by default: a server whose concurrent requests each call `execute` runs their
    ///   operations one after another. Give them a sequence of their own with a larger bunch size.
    ///
    /// ```swift
    /// let data = try await point.execute(CallOperation(kind: "fetch"))
    /// ```
    ///
    /// On a DataPoint that has not started to run, `execute` first waits until it does, so that a service may call it
    /// while the task that calls ``run()`` is still starting. Cancelling the waiting task ends that wait.
    ///
    /// It never waits forever: past `deadline` on the DataPoint's clock, five minutes by default, it cancels the
    /// operation and throws ``RelayError/Code/deadlineExceeded``, saying what the operation waited for (an offline
    /// destination and since when, a retry, its dependencies) and how many attempts it made. Pass `nil` to wait as
    /// long as the operation takes, for example when its retry policy already bounds it.
    ///
    /// - Parameters:
    ///   - operation: The operation.
    ///   - deadline: How long to wait before giving up; ``executeDeadline`` unless given, `nil` for no limit.
    /// - Returns: The result of the completed operation, as ``CallHandle/value`` gives it: for an HTTP operation, the
    ///   response's body.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/notRunning`` when the task is cancelled before the
    ///   DataPoint runs, ``RelayError/Code/shutdown`` when it has shut down,
    ///   ``RelayError/Code/deadlineExceeded`` past the deadline, the errors of ``enqueue(_:)-(CallOperation)``, and
    ///   those of ``CallHandle/value``.
    public nonisolated func execute(
        _ operation: CallOperation, deadline: Duration? = DataPoint.executeDeadline
    ) async throws -> Data {
        try await executed(operation, deadline: deadline).value
    }

    /// How long `execute` waits for an operation unless told otherwise: five minutes.
    public static let executeDeadline = Duration.seconds(300)

    /// Enqueues `operation` once the DataPoint runs and waits until it finishes, or until `deadline` has passed on
    /// the DataPoint's clock; then it cancels the operation and throws, saying what it was waiting for.
    nonisolated func executed(_ operation: CallOperation, deadline: Duration?) async throws -> CallHandle {
        var lifecycle = core.read(\.lifecycle)
        if lifecycle == .idle {
            await core.waitUntilStarted()
            lifecycle = core.read(\.lifecycle)
        }
        switch lifecycle {
        case .idle:
            throw RelayError(
                .notRunning,
                "execute waited for the DataPoint to run, and its task was cancelled first; "
                    + "call run() or use DataPoint.with { point in ... }",
                operationIDs: [operation.id]
            )
        case .stopping, .stopped:
            throw RelayError(.shutdown, "the DataPoint has shut down", operationIDs: [operation.id])
        case .running:
            break
        }
        let handle = try await enqueue(operation)
        guard let deadline else {
            _ = try await handle.outcome
            return handle
        }
        let (end, overflow) = core.clock.now.addingReportingOverflow(max(.zero, deadline).relayNanoseconds)
        if try await handle.outcome(before: overflow ? .max : end) != nil { return handle }
        // Read for the message only: a store that cannot be read leaves it out.
        let status = (try? await handle.status) ?? nil
        // It may have finished in the meantime, which the cancel then leaves as it is.
        guard try await cancel(operation.id) else { return handle }
        let waiting =
            status.map { " It was \($0.state) after \($0.attempts) attempt\($0.attempts == 1 ? "" : "s")" } ?? ""
        let failure = status?.lastFailure.map { "; the last attempt found: \($0.reason)" } ?? ""
        throw RelayError(
            .deadlineExceeded,
            "operation \(operation.id) did not finish within \(deadline.readable), so it was cancelled.\(waiting)\(failure)",
            operationIDs: [operation.id])
    }

    /// A handle for a known operation, for example to await an outcome after a restart.
    ///
    /// On a shared store (see ``SharedStorage``), an operation this DataPoint does not hold is looked up in the store,
    /// wherever it was enqueued and wherever it runs: its handle settles when it ends, in whichever process.
    ///
    /// ```swift
    /// let handle = try await point.handle(for: id)
    /// let result = try await handle.outcome
    /// ```
    ///
    /// - Parameter id: The operation's id.
    /// - Returns: Its handle.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/unknownOperation`` when no such operation is known, or
    ///   ``RelayError/Code/storageFailure`` when a shared store cannot be read.
    public nonisolated func handle(for id: UUID) async throws -> CallHandle {
        if let record = core.readWithDirectory({ $0.record(of: id, in: $1) }) {
            return CallHandle(record: record, core: core)
        }
        guard let shared = core.shared else {
            throw RelayError(.unknownOperation, "no operation \(id) is known", operationIDs: [id])
        }
        return CallHandle(record: try await core.lookUpShared(shared, id), core: core)
    }

    // MARK: - Control

    /// Cancels an operation.
    ///
    /// A pending operation becomes `cancelled` at once and its dependents are cancelled with it, unless they opted
    /// into ``CallOperation/DependencyFailurePolicy/runAnyway``. A running operation's task is cancelled; it ends
    /// `cancelled` unless its executor completes anyway. A finished operation is left as it is. On a shared store
    /// (see ``SharedStorage``), an operation this DataPoint does not run is cancelled wherever it waits or runs.
    ///
    /// - Parameter id: The operation's id.
    /// - Returns: Whether the call changed anything.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/unknownOperation`` when no such operation is known.
    @discardableResult
    public nonisolated func cancel(_ id: UUID) async throws -> Bool {
        try await core.cancel(id)
    }

    /// Keeps an operation from starting until a date; it starts once the latest of its holds has passed.
    ///
    /// Each context holds independently; pass `nil` as the date to release a context's hold. On a shared store (see
    /// ``SharedStorage``), an operation this DataPoint does not hold is held wherever it waits, and no process starts
    /// it until then.
    ///
    /// ```swift
    /// try await point.hold(id, until: point.now.addingTimeInterval(60), context: "rate-limit")
    /// ```
    ///
    /// - Parameters:
    ///   - id: The operation's id.
    ///   - date: When the hold ends, or `nil` to release it.
    ///   - context: Which hold to set; holds of different contexts combine.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/unknownOperation`` or
    ///   ``RelayError/Code/operationFinished``, or ``RelayError/Code/invalidArgument`` for a date that is not finite.
    public nonisolated func hold(_ id: UUID, until date: Date?, context: String? = nil) async throws {
        if let date, !date.timeIntervalSinceReferenceDate.isFinite {
            throw RelayError(.invalidArgument, "cannot hold \(id) until \(date): the date is not finite")
        }
        try await core.hold(id, until: date, context: context)
    }

    /// Stops starting operations in every sequence until a matching ``resume(reason:)``.
    ///
    /// On a shared store (see ``SharedStorage``), the count is the fleet's: no process claims more operations until
    /// the suspension is resumed, from this process or another.
    ///
    /// - Parameter reason: Why, reported in the ``CallEvent/Kind/suspended(reason:)`` event.
    /// - Returns: The new suspension count.
    /// - Throws: ``RelayError`` when the change cannot be recorded.
    @discardableResult
    public nonisolated func suspend(reason: String = "suspended by request") async throws -> Int {
        try await core.suspend(nil, reason: reason)
    }

    /// Undoes one ``suspend(reason:)``; at zero every sequence starts operations again.
    ///
    /// Extra calls do nothing.
    ///
    /// - Parameter reason: Why, reported in the ``CallEvent/Kind/resumed(reason:)`` event.
    /// - Returns: The new suspension count.
    /// - Throws: ``RelayError`` when the change cannot be recorded.
    @discardableResult
    public nonisolated func resume(reason: String = "resumed by request") async throws -> Int {
        try await core.resume(nil, reason: reason)
    }

    // MARK: - Observation

    /// An operation's current state, or `nil` when no such operation is known; the one way to read a status by id
    /// (a handle reads its own, ``CallHandle/status``, the same way).
    ///
    /// On a shared store (see ``SharedStorage``), an operation this DataPoint does not hold is looked up in the store,
    /// wherever it was enqueued and wherever it runs.
    ///
    /// ```swift
    /// if let status = try await point.status(of: id), case .pending(let waiting) = status.state {
    ///     print("waiting for", waiting)
    /// }
    /// ```
    ///
    /// - Parameter id: The operation's id.
    /// - Returns: Its status.
    /// - Throws: ``RelayError`` with ``RelayError/Code/storageFailure`` when a shared store cannot be read; a
    ///   DataPoint on its own store never throws here.
    public nonisolated func status(of id: UUID) async throws -> CallStatus? {
        try await core.status(of: id)
    }

    /// Every event from now on, in a stream of its own with a bounded buffer.
    ///
    /// The stream ends as soon as the DataPoint begins to shut down, so that a consumer a graceful shutdown waits for,
    /// such as a server's handler that streams events to a client, never holds the shutdown up. Events of the grace
    /// period, such as the ends of operations still running, do not reach it; their handles have their outcomes.
    ///
    /// - Parameter bufferSize: How many events to buffer before dropping the oldest; the configuration's by default.
    /// - Returns: The events; the stream ends when the DataPoint begins to shut down.
    public nonisolated func events(bufferSize: Int? = nil) -> CallEventStream {
        // Subscribing to every operation cannot fail.
        (try? core.subscribe(to: nil, bufferSize: bufferSize ?? configuration.eventBufferSize))
            ?? CallEventStream(lifetime: SubscriptionLifetime(subscription: EventSubscription(capacity: 1)) {})
    }

    /// Every event after `sequenceNumber`: what the DataPoint still keeps of those it missed, then every event from now
    /// on, as ``events(bufferSize:)`` gives them.
    ///
    /// A client that streams events and reconnects, such as a server-sent-events client sending `Last-Event-ID`, passes
    /// the last number it saw and misses nothing the DataPoint keeps (``Configuration/eventHistorySize``, none by
    /// default). When events it missed are no longer kept, the stream says so first: a
    /// ``CallEvent/Kind/dropped(_:)`` notice counts them, names no finished operation, and says that it does not
    /// (``DroppedEvents/namesEveryFinished`` is `false`), so that the client reads the state of what it follows.
    /// Numbers start at 1 as a DataPoint opens: a number from an earlier run replays everything kept, after such a
    /// notice counting nothing.
    ///
    /// ```swift
    /// for await event in point.events(after: lastEventID) {
    ///     send(event, id: event.sequenceNumber)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - sequenceNumber: The last number the subscriber saw; 0 for none.
    ///   - bufferSize: How many events to buffer before dropping the oldest; the configuration's by default.
    /// - Returns: The events; the stream ends when the DataPoint begins to shut down.
    public nonisolated func events(after sequenceNumber: UInt64, bufferSize: Int? = nil) -> CallEventStream {
        core.subscribe(after: sequenceNumber, bufferSize: bufferSize ?? configuration.eventBufferSize)
    }

    /// One operation's events from now on; the stream ends after its terminal event, or as the DataPoint begins to
    /// shut down (see ``events(bufferSize:)``).
    ///
    /// On a shared store, it follows an operation that another process runs while a handle here awaits it: one
    /// enqueued here, or found with ``handle(for:)``.
    ///
    /// - Parameters:
    ///   - id: The operation's id.
    ///   - bufferSize: How many events to buffer before dropping the oldest.
    /// - Returns: The operation's events.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/unknownOperation`` when no such operation is known.
    public nonisolated func events(for id: UUID, bufferSize: Int = 1024) throws -> CallEventStream {
        try core.subscribe(to: id, bufferSize: bufferSize)
    }

    /// Counts per state and sequence, running operations, and latency percentiles, right now.
    ///
    /// On a store that several processes share, they cover what this process knows; the store may report the whole
    /// fleet's (PostgreSQL's `PostgresFleetStorage.metrics(of:window:deadline:)`).
    ///
    /// - Returns: The snapshot.
    public nonisolated func metrics() -> MetricsSnapshot {
        core.read { $0.metricsSnapshot(droppedEvents: core.events.droppedEvents) }
    }

    /// A snapshot of the metrics after every interval on the DataPoint's clock.
    ///
    /// - Parameter interval: Time between snapshots.
    /// - Returns: The periodic snapshots; the stream ends at the first snapshot due after the DataPoint begins to shut
    ///   down.
    public nonisolated func metrics(every interval: Duration) -> MetricsStream {
        MetricsStream(core: core, interval: interval)
    }
}
