import Foundation

/// The document that runs operations: the entry point of Relay.
///
/// A DataPoint owns its storage, its ``Pipeline`` and its sequences. You enqueue operations into it, register the
/// executors that run them, and await their outcomes, observe their events, and read its metrics.
///
/// The shortest way to run one is ``with(storage:clock:configuration:executors:waitForPending:isolation:_:)``, which
/// runs the engine for the scope of a closure:
///
/// ```swift
/// try await DataPoint.with { point in
///     point.register(ClosureExecutor { operation, _ in .completed(operation.payload) }, for: "echo")
///     let echoed = try await point.execute(CallOperation(kind: "echo", payload: Data("hi".utf8)))
/// }
/// ```
///
/// In a service, create it once and run ``run()`` beside your server; cancelling that task stops it.
///
/// - Important: Every method may be called from any task. Operations start only while ``run()`` is running.
public actor DataPoint {
    /// The authority over operation state, for detailed queries.
    public nonisolated let pipeline: Pipeline
    /// The limits and policies the DataPoint was opened with.
    public nonisolated let configuration: Configuration
    nonisolated let core: PipelineCore

    /// Opens a DataPoint on a store and rebuilds its state from what the store holds.
    ///
    /// - Parameters:
    ///   - storage: Where transitions are recorded: by default a ``FileStorage`` in ``FileStorage/defaultFolder``;
    ///     ``Storage/volatile`` keeps them in memory only.
    ///   - clock: The clock that drives holds, retries, metrics and shutdown deadlines; tests inject a manual one.
    ///   - configuration: Limits and policies.
    ///   - executors: Executors by kind, in place before the store's operations are restored, so that none of them
    ///     can run on another: give here every executor that a reopened store's operations need, such as an
    ///     ``HTTPExecutor`` with your ``RequestAuthorizer`` for ``CallKind/http``, which replaces the built-in one.
    /// - Throws: ``RelayError`` when the store cannot be opened: ``RelayError/Code/storeLocked`` when another
    ///   DataPoint holds its folder, ``RelayError/Code/corruptStore`` when it is damaged.
    public init(
        storage: some Storage = FileStorage(at: FileStorage.defaultFolder),
        clock: some Clock<Duration> = ContinuousClock(),
        configuration: Configuration = Configuration(),
        executors: [CallKind: any CallExecutor] = [:]
    ) async throws {
        let core = PipelineCore(storage: storage, clock: ClockSource(clock), configuration: configuration)
        self.core = core
        self.configuration = configuration
        pipeline = Pipeline(core: core)
        core.register(HTTPExecutor(clock: clock), for: .http)
        for (kind, executor) in executors { core.register(executor, for: kind) }
        let stored = try await storage.open(retention: configuration.retentionPolicy)
        HTTPExecutor.removePartialDownloads(of: stored.operations)
        try await core.restore(stored)
        // The default sequences, then every sequence the store registered: each gets its actor with the configuration
        // it was stored with, so that its operations run and `sequence(named:)` finds it.
        let defaults: [CallSequence.Name] = [.data, .downloads, .uploads]
        for name in defaults + stored.sequences.map(\.name).filter({ !defaults.contains($0) }) {
            let stored = stored.sequences.first { $0.name == name }
            let sequence = try CallSequence(
                name: name, bunchSize: max(1, stored?.bunchSize ?? 1), algorithm: stored?.algorithm ?? .flat)
            _ = try await sequence.attach(to: core)
            try await core.adoptLane(name, sequence: sequence)
        }
    }

    // Lanes hold their sequences and sequences hold the pipeline; letting go of the sequences here breaks that
    // cycle, so that a DataPoint that is dropped frees its operations and, with them, its store and the store's lock.
    deinit {
        core.releaseSequences()
    }

    /// Opens a DataPoint, runs it while `body` runs, then shuts it down gracefully.
    ///
    /// Operations still pending when `body` returns stay pending: a file store keeps them for the next open, and
    /// ``Storage/volatile`` loses them. Pass `waitForPending: true` to let every operation that can run finish first.
    ///
    /// The DataPoint is running when `body` starts, so `execute` works at once, and so do the operations a reopened
    /// store restored: an executor that they need belongs in `executors`, not in a `register` call in `body`, which
    /// would come after some of them had started on whatever was registered before.
    ///
    /// ```swift
    /// let summary = try await DataPoint.with(storage: .volatile) { point in
    ///     try await point.execute(operation)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - storage: Where transitions are recorded.
    ///   - clock: The clock that drives time.
    ///   - configuration: Limits and policies.
    ///   - executors: Executors by kind, in place before any restored operation can start (see
    ///     ``init(storage:clock:configuration:executors:)``).
    ///   - waitForPending: Whether to wait, once `body` returns, until nothing runs and nothing more can start before
    ///     shutting down. Operations that wait for a hold or a retry time still ahead, a suspended sequence, an
    ///     offline destination or an executor that is not registered stay pending. `false` by default.
    ///   - isolation: The caller's isolation, where `body` runs; inferred.
    ///   - body: The work to do with the running DataPoint.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or ``RelayError`` when the store cannot be opened.
    public static func with<Result>(
        storage: some Storage = FileStorage(at: FileStorage.defaultFolder),
        clock: some Clock<Duration> = ContinuousClock(),
        configuration: Configuration = Configuration(),
        executors: [CallKind: any CallExecutor] = [:],
        waitForPending: Bool = false,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (DataPoint) async throws -> Result
    ) async throws -> Result {
        let point = try await DataPoint(
            storage: storage, clock: clock, configuration: configuration, executors: executors)
        try point.core.start()
        return try await withThrowingTaskGroup(of: Void.self, isolation: isolation) { group in
            group.addTask { await point.core.run() }
            do {
                let result = try await body(point)
                if waitForPending { await point.waitUntilIdle() }
                try await point.shutdown()
                try await group.waitForAll()
                return result
            } catch {
                try? await point.shutdown()
                throw error
            }
        }
    }

    /// Runs the engine until the task is cancelled or ``shutdown(gracePeriod:)`` is called.
    ///
    /// This matches the shape of a ServiceLifecycle `Service`. Cancelling the task stops at once: running
    /// operations see cancellation and stay stored as pending. For a graceful stop, call
    /// ``beginShutdown(gracePeriod:)`` (for example from a graceful-shutdown handler) and let `run()` return.
    ///
    /// If the DataPoint has already shut down, for example because a shutdown raced ahead of the task that runs
    /// it, `run()` returns at once, as a service should.
    ///
    /// - Throws: ``RelayError`` with code ``RelayError/Code/alreadyRunning`` when it is already running, or with code
    ///   ``RelayError/Code/storageFailure`` when the store failed to close: what was acknowledged is durable, and
    ///   what was not may be lost.
    public nonisolated func run() async throws {
        do {
            try core.start()
        } catch  where error.code == .shutdown {
            return
        }
        await core.run()
        try core.checkClosed()
    }

    /// Returns once the DataPoint runs: its store is restored, as it is once `init` returns, and ``run()`` has
    /// started the engine, so that operations start as they are enqueued.
    ///
    /// ServiceLifecycle starts a group's services one after another without waiting for any to be ready; a service
    /// that must not take work before Relay runs, such as an HTTP server, awaits this first.
    ///
    /// - Throws: ``RelayError`` with code ``RelayError/Code/shutdown`` when the DataPoint stops before it runs, or has
    ///   begun to stop; `CancellationError` when the waiting task is cancelled first.
    public nonisolated func ready() async throws {
        await core.waitUntilStarted()
        switch core.read(\.lifecycle) {
        case .running:
            return
        case .stopping, .stopped:
            throw RelayError(.shutdown, "the DataPoint has shut down, or begun to, so it will not run")
        case .idle:
            throw CancellationError()
        }
    }

    /// Stops starting operations, lets running ones finish within the grace period, then cancels them, and waits
    /// until the DataPoint has stopped.
    ///
    /// Pending operations stay stored. Every task awaiting an outcome is resumed with a ``RelayError/Code/shutdown``
    /// error.
    ///
    /// - Parameter gracePeriod: How long running operations may take; the configuration's by default.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/storageFailure`` when the store failed to close: what was
    ///   acknowledged is durable, and what was not may be lost.
    public nonisolated func shutdown(gracePeriod: Duration? = nil) async throws {
        if core.beginStop(gracePeriod: gracePeriod ?? configuration.shutdownGracePeriod) {
            let failure = await core.closeStorage()
            core.apply { machine, _ in machine.closeFailure = machine.closeFailure ?? failure }
        }
        await core.waitUntilStopped()
        try core.checkClosed()
    }

    /// Stops as a crash would, for crash tests: the store keeps what was acknowledged, records nothing more, and
    /// releases its folder; running operations are cancelled at once.
    package nonisolated func crash() async {
        (core.storage as? FileStorage)?.abandon()
        try? await shutdown(gracePeriod: .zero)
    }

    /// Starts a graceful shutdown without waiting for it; ``run()`` returns once it is complete.
    ///
    /// Use it from synchronous contexts such as a graceful-shutdown handler. A DataPoint that never ran stops at
    /// once; call ``shutdown(gracePeriod:)`` instead to also close its store.
    ///
    /// - Parameter gracePeriod: How long running operations may take; the configuration's by default.
    public nonisolated func beginShutdown(gracePeriod: Duration? = nil) {
        core.beginStop(gracePeriod: gracePeriod ?? configuration.shutdownGracePeriod)
    }

    /// The current date on the DataPoint's clock.
    public nonisolated var now: Date { core.clock.date(core.clock.now) }

    /// What the store found and repaired when this DataPoint opened it; `nil` for stores that keep nothing, like
    /// ``VolatileStorage``.
    public nonisolated var recoveryReport: RecoveryReport? { core.read { $0.recoveryReport } }
}

extension DataPoint {
    /// Returns once nothing runs and nothing more can start without outside input.
    package nonisolated func waitUntilIdle() async {
        await core.waitUntilQuiet(untilIdle: true)
    }

    /// Returns once nothing more can start without outside input; operations may still run.
    package nonisolated func waitUntilSettled() async {
        await core.waitUntilQuiet(untilIdle: false)
    }

    /// Returns once nothing runs and nothing more can start, or once every running operation's executor sleeps on
    /// the DataPoint's clock, when that clock reports its sleepers: the ids of those operations then, none when idle.
    package nonisolated func waitUntilIdleOrStalled() async -> [UUID] {
        await core.waitUntilIdleOrStalled()
    }

    /// The clock's time and sleepers in words, when the DataPoint's clock reports them, such as a manual clock.
    package nonisolated var clockSleepersDescription: String? {
        core.clock.sleepersDescription?()
    }

    /// Adds a sink that receives every event from now on, for test recorders.
    package nonisolated func addEventSink(_ sink: any EventSink) {
        core.addSink(sink)
    }
}
