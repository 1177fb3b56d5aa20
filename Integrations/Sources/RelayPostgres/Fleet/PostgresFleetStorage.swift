import Foundation
import Logging
import PostgresNIO
import Relay
import Synchronization

/// A DataPoint's store in a PostgreSQL database that every process of a fleet opens: one queue, fleet-wide.
///
/// ```swift
/// let client = PostgresClient(configuration: configuration)  // run by the service group, or a task of yours
/// try await DataPoint.with(storage: .postgresFleet(client)) { point in
///     try await point.execute(HTTPCall(method: .post, url: webhookURL, body: .data(payload)))
/// }
/// ```
///
/// Each process commits what it enqueues to the database, which numbers commits fleet-wide, and runs what it claims
/// there: a batch at a time, in start order, never more of a sequence at once than its bunch size across the whole
/// fleet. A claim is a lease that the process renews while it runs the operation; when a process dies or loses the
/// database, its leases expire and the operations run elsewhere, their attempt counted, and the process that lost
/// them can no longer record their outcomes. A handle settles once the operation's outcome is committed, from
/// whichever process ran it: processes hear of new and finished work through `LISTEN`, and look it up on a timer
/// too, so that nothing waits on a notification that was missed.
///
/// The client must be running (its `run()` under way) for as long as the DataPoint is; the store takes a connection
/// of its pool to listen on while the DataPoint runs. Every process of the fleet registers the same sequences and
/// executors: a process claims only operations of sequences it has registered.
///
/// A suspension, of a sequence or of the DataPoint, made in any process holds fleet-wide until it is resumed from any:
/// no process claims from it meanwhile, though one may still start what it claimed before, at most
/// ``Options/claimLimit``.
///
/// A stream of every event of a DataPoint (``DataPoint/events(bufferSize:)``) tells what the whole fleet does to
/// operations: the database keeps a log of each operation enqueued, started and ended, written in the transaction
/// that makes the change, and every process follows it (see ``Options/eventRetention``). A transaction left open in
/// the database delays the events written after it began until it ends.
///
/// Built so far: enqueues, in a transaction of the application's too (see ``joining(_:_:)``), scheduled starts,
/// claims, leases, outcomes, retries, suspensions, holds, offline destinations, cancellation, statuses, handles
/// awaited from any process, events of operations, the fleet's counts (``operationCounts(of:sequence:deadline:)``),
/// and the document (models, key-values and relations), committed with the transactions and completions that change
/// them.
public final class PostgresFleetStorage: SharedStorage {
    /// How the store claims and keeps operations.
    public struct Options: Sendable {
        /// How long a claim lasts unless renewed, which it is at a third of it; 30 seconds by default.
        ///
        /// The store also looks for other processes' expired leases every third of its own, so an operation held by a
        /// process that died runs elsewhere within its lease and a third of the others': give every process of a
        /// fleet the same lease.
        public var lease: Duration = .seconds(30)
        /// How often the store looks for work and outcomes it was not told of; 1 second by default.
        ///
        /// An operation enqueued with a start time is found this way once its time has come: it starts within this
        /// interval of its time, by the database's clock.
        public var pollInterval: Duration = .seconds(1)
        /// Whether the store hears of new and finished work through `LISTEN`; `true` by default.
        ///
        /// Set it to `false` behind a connection pooler that hands each transaction another connection (PgBouncer's
        /// transaction mode), where a `LISTEN` hears nothing: the store then finds work and outcomes by polling alone,
        /// every ``pollInterval``.
        public var listens = true
        /// The most claimed operations waiting here for a worker; 64 by default.
        public var claimLimit = 64
        /// Whether this process claims operations to run; `true` by default.
        ///
        /// Set it to `false` in a process that only reads and acts on the fleet, as the `relay` command does: every
        /// DataPoint registers the default sequences, so such a process would otherwise claim their operations and
        /// hold them, unrun where it has no executor for them, until it closes.
        public var claims = true
        /// How long each call to the database waits for it, for a connection of the pool included, before it fails
        /// with ``RelayError/Code/storageFailure``, and how long the store keeps trying to record an outcome before
        /// it leaves the operation to run again elsewhere once its lease expires; 30 seconds by default.
        public var deadline: Duration = .seconds(30)
        /// How long the fleet's event log keeps an event, by the database's clock; 10 minutes by default.
        ///
        /// Every process follows the log as it grows, to publish what the others did to its own event streams (see
        /// ``SharedLink/publish(_:)``), and deletes what is older than this every third of its lease.
        public var eventRetention: Duration = .seconds(600)

        /// The default options.
        public init() {}
    }

    let queue: PostgresQueue
    let options: Options
    let clock: any Clock<Duration>
    /// The process's identity in the fleet: the owner of its claims.
    let owner = UUID()
    /// The operations this process holds, with the attempt that fences their outcomes, and whether one began.
    let held = Mutex<[UUID: PostgresHeldClaim]>([:])
    let commits = PostgresGroupCommit<PostgresFleetWrite>()
    /// What the DataPoint keeps of finished operations, once it has opened the store: what is older is pruned.
    let retention = Mutex<RetentionPolicy?>(nil)
    /// The running DataPoint, and the wakes of the loops that claim, that follow the event log and that follow the
    /// document, while ``run(_:)`` runs.
    let running = Mutex<
        (
            link: SharedLink, wake: AsyncStream<Void>.Continuation, events: AsyncStream<Void>.Continuation,
            document: AsyncStream<Void>.Continuation
        )?
    >(nil)
    /// The DataPoint's place among the rows of the fleet's document: it holds every change behind it, and the store
    /// reads what follows.
    let documentCursor = Mutex(PostgresQueue.DocumentCursor(through: 0))
    /// The event log's end when the store opened: the loop that follows the log starts there, so that a stream opened
    /// as soon as the DataPoint has opened misses nothing written after, however late the loop's first read comes.
    let eventsAtOpen = Mutex<PostgresQueue.EventCursor?>(nil)
    /// What attempts staged, by operation, whose outcomes the store gave up recording when the database was out of
    /// reach: recorded with the outcome when the operation is claimed here again, or let go once it ends elsewhere.
    let unrecordedChanges = Mutex<[UUID: [ModelChange]]>([:])
    /// Whether a destination may be offline: the store looks for due probes on every poll only while it may, and
    /// on the lease's cadence whatever it heard, so that a fleet with every destination online reads nothing more.
    let offlineKnown = Mutex(false)
    /// The room that claims under way have reserved: see ``PostgresClaimRoom``.
    let claimRoom: Mutex<PostgresClaimRoom>
    /// What the poll looks up for the handles awaited here.
    let backstop = Mutex(PostgresBackstop())

    /// A store on the database that `client` reaches.
    ///
    /// - Parameters:
    ///   - client: A client of the database, running for as long as the DataPoint does.
    ///   - options: How the store claims and keeps operations.
    ///   - clock: The clock of leases' renewals and of polling; the database's clock times the leases themselves.
    ///   - logger: Where the store logs what fails in the background; nothing by default.
    public init(
        client: PostgresClient,
        options: Options = Options(),
        clock: any Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "RelayPostgres")
    ) {
        queue = PostgresQueue(client: client, logger: logger, deadline: options.deadline, clock: clock)
        self.options = options
        self.clock = clock
        claimRoom = Mutex(PostgresClaimRoom(limit: options.claimLimit))
    }

    var logger: Logger { queue.logger }

    /// Migrates the database's schema; a fleet's state lives in its tables, so the DataPoint starts with no operation
    /// and runs what it claims.
    ///
    /// - Returns: The fleet's document, and its configuration of the default sequences, which this registers when
    ///   the fleet has not yet.
    /// - Throws: ``RelayError/Code/unsupportedFormat`` for a newer schema, or ``RelayError/Code/storageFailure``.
    public func open() async throws -> StoredState {
        // A pool that has just found the database again may take longer than a call's deadline to connect.
        let deadline = max(options.deadline, PostgresSchema.deadline)
        try await PostgresSchema.migrate(queue.client, deadline: deadline, clock: clock, logger: logger)
        let eventsEnd = try await queue.eventCursor()
        eventsAtOpen.withLock { $0 = eventsEnd }
        let (rows, version) = try await queue.document(within: deadline)
        documentCursor.withLock { $0 = PostgresQueue.DocumentCursor(through: version) }
        var models: [String: [String: Data]] = [:]
        for row in rows { models[row.change.collection, default: [:]][row.change.id] = row.change.encoded }
        // Every DataPoint has these; a process that opens takes the fleet's configuration of them, and changes none.
        let sequences = try await queue.registerDefaults([.data, .downloads, .uploads], within: deadline)
        return StoredState(sequences: sequences, models: models)
    }

    /// Migrates the database's schema, as ``open()`` does, for a DataPoint that keeps finished operations as
    /// `retention` says: while it runs, this process deletes from the database, every third of its lease, the
    /// finished operations past their window, and the oldest past the most kept, of the whole fleet.
    ///
    /// The byte bounds of the policy (``RetentionPolicy/maximumBytes``, ``RetentionPolicy/maximumDeadLetterBytes``)
    /// bound a process's memory; the database is bounded by the windows and counts. Give every process of a fleet the
    /// same policy: each prunes by its own.
    ///
    /// - Parameter retention: The DataPoint's policy, from its ``DataPoint/Configuration``.
    /// - Returns: As ``open()`` returns.
    /// - Throws: As ``open()`` does.
    public func open(retention: RetentionPolicy) async throws -> StoredState {
        let state = try await open()
        self.retention.withLock { $0 = retention }
        return state
    }

    /// Commits operations as one commit, numbered fleet-wide; see ``SharedStorage/commit(_:)``.
    ///
    /// A commit that fails at its deadline may have been committed all the same, if the database received it but its
    /// answer was lost: enqueueing the same operations again, with the same ids, changes nothing then (S1).
    ///
    /// - Throws: ``RelayError/Code/storageFailure`` when the database does not answer within the deadline, or the
    ///   typed error of a commit it refuses.
    public func commit(_ operations: [CallOperation], startTimes: [UUID: Date]) async throws -> SharedCommit {
        if let transaction = Self.joined {
            let enqueued = try await PostgresQueue.mapping("enqueueing a commit in the application's transaction") {
                try await queue.enqueue(operations, startTimes: startTimes, on: transaction)
            }
            backstop.withLock { $0.joined(operations.map(\.id)) }
            // Visible once the application commits: every process, this one too, announces it from the event log then.
            return SharedCommit(snapshot: enqueued.snapshot, outcomes: enqueued.outcomes)
        }
        let enqueued = try await queue.enqueue(operations, startTimes: startTimes, enqueuer: owner)
        wakeClaimsUnheard(enqueued.added)
        return SharedCommit(snapshot: enqueued.snapshot, outcomes: enqueued.outcomes, announced: enqueued.added)
    }

    /// Commits operations and changes to the document as one commit, numbered fleet-wide; see
    /// ``SharedStorage/commit(_:changes:erasures:startTimes:)``.
    ///
    /// Relations are checked, and removals and erasures cascade, against the document as the database holds it, under
    /// the counters' row lock that every commit takes first (S23). Every process applies the changes once it follows
    /// them, within its ``Options/pollInterval`` and usually at once, through `LISTEN`. A transaction joined with
    /// ``joining(_:_:)`` commits its changes with the application's.
    ///
    /// - Throws: As ``commit(_:startTimes:)`` throws, and ``RelayError/Code/modelNotFound`` for a relation that
    ///   names a model the database does not hold.
    public func commit(
        _ operations: [CallOperation], changes: [ModelChange], erasures: [Alias], startTimes: [UUID: Date]
    ) async throws -> SharedCommit {
        if let transaction = Self.joined {
            let enqueued = try await PostgresQueue.mapping("committing in the application's transaction") {
                try await queue.enqueue(
                    operations, changes: changes, erasures: erasures, startTimes: startTimes, enqueuer: nil,
                    on: transaction)
            }
            backstop.withLock { $0.joined(operations.map(\.id)) }
            // Every process, this one too, applies the changes once the application commits, as it follows them.
            return SharedCommit(
                snapshot: enqueued.snapshot, outcomes: enqueued.outcomes, isVisible: false, changes: enqueued.changes)
        }
        let enqueued = try await PostgresQueue.mapping("committing a transaction") {
            try await queue.enqueue(
                operations, changes: changes, erasures: erasures, startTimes: startTimes, enqueuer: owner)
        }
        wakeClaimsUnheard(enqueued.added)
        return SharedCommit(
            snapshot: enqueued.snapshot, outcomes: enqueued.outcomes, announced: enqueued.added,
            changes: enqueued.changes)
    }

    /// Removes finished operations from the database now, wherever they ran; see ``SharedStorage/purge(_:)``.
    ///
    /// - Throws: ``RelayError/Code/operationUnfinished`` when one has not finished, and then nothing is removed;
    ///   ``RelayError/Code/storageFailure`` when the database does not answer within the deadline.
    public func purge(_ ids: [UUID]) async throws -> Int {
        try await queue.purge(ids)
    }

    /// The application's transaction that commits join while ``joining(_:_:)`` runs.
    @TaskLocal static var joined: PostgresConnection?

    /// Runs `body` with every enqueue it makes on a DataPoint of a fleet's store joining the transaction open on
    /// `connection`, one of the application's on the same database (S30): the operations are visible to no process
    /// before that transaction commits, run once it does, and never run if it rolls back.
    ///
    /// ```swift
    /// let handles = try await client.withTransaction(logger: logger) { connection in
    ///     try await connection.query("INSERT INTO orders (id) VALUES (\(order))", logger: logger)
    ///     return try await PostgresFleetStorage.joining(connection) {
    ///         try await point.enqueue([CallOperation(kind: "confirm-order", payload: payload)])
    ///     }
    /// }
    /// let confirmation = try await handles[0].value
    /// ```
    ///
    /// The handles settle once the operations end, wherever they run. Those of a transaction that rolled back fail
    /// with ``RelayError/Code/unknownOperation`` once the store looks them up, within its ``Options/pollInterval``.
    /// A commit takes the fleet's counters' row, as every commit does, and holds it until the transaction ends, so
    /// that snapshot numbers follow the order of commits: other processes' enqueues wait meanwhile, so keep the
    /// transaction short. An enqueue that throws leaves the transaction to be rolled back.
    ///
    /// - Parameters:
    ///   - connection: A connection with a transaction open, to the database the DataPoints' stores use.
    ///   - body: The work whose enqueues join the transaction.
    /// - Returns: What `body` returns.
    public static func joining<Result: Sendable>(
        _ connection: PostgresConnection, _ body: () async throws -> Result
    ) async rethrows -> Result {
        try await $joined.withValue(connection) { try await body() }
    }

    /// Gathers what the records of the operations this process runs change in the database.
    ///
    /// - Parameter records: The transitions, oldest first.
    /// - Returns: The ticket of the last change.
    public func append(_ records: [StorageRecord]) -> StorageTicket {
        let writes = records.compactMap(PostgresFleetWrite.init)
        let ticket = commits.append(writes)
        if writes.contains(where: \.claimsFreedSlot) {
            claimRoom.withLock { $0.gathered(outcomesThrough: ticket.position) }
        }
        return ticket
    }

    /// Returns once the changes up to `ticket` are committed, writing them if no write is in flight.
    ///
    /// A write that fails is tried again until the deadline; then the store gives it up rather than failing for
    /// good, since the database's leases make up for it: an outcome not recorded is recorded by the process that runs
    /// the operation again once its lease expires.
    ///
    /// - Parameter ticket: A ticket from ``append(_:)``.
    /// - Throws: Nothing in practice: a write the store gives up is left to the leases.
    public func waitUntilDurable(_ ticket: StorageTicket) async throws {
        try await commits.waitUntilDurable(ticket) { batch in
            await applyPersistently(batch.items)
            claimRoom.withLock { $0.wrote(through: batch.through) }
        }
    }

    /// Wakes this process's claims for the operations a commit of its own added, when no `LISTEN` announces them: in
    /// the poll-only mode, or while the listener's connection is being made again, work enqueued here would otherwise
    /// wait for the next poll.
    private func wakeClaimsUnheard(_ added: [UUID]) {
        if !added.isEmpty, !backstop.withLock({ $0.isListening }) { wakeClaims() }
    }

    /// Registers or reconfigures a sequence fleet-wide; see
    /// ``SharedStorage/configure(_:bunchSize:algorithm:replacing:)``.
    ///
    /// - Throws: ``RelayError/Code/storageFailure`` when the database does not answer within the deadline.
    public func configure(
        _ sequence: CallSequence.Name, bunchSize: Int, algorithm: CallSequence.Algorithm, replacing: Bool
    ) async throws {
        try await queue.configure(sequence, bunchSize: bunchSize, algorithm: algorithm, replacing: replacing)
        wakeClaims()
    }

    /// Moves the fleet-wide suspension count of a sequence, or of every sequence; see
    /// ``SharedStorage/changeSuspensions(of:by:reason:)``.
    ///
    /// The change is committed, and announced to every process, before this returns: from then on no process claims
    /// from what it suspended. A suspension or a resume is written to the fleet's event log in the same transaction.
    public func changeSuspensions(
        of sequence: CallSequence.Name?, by change: Int, reason: String
    ) async throws -> (previous: Int, count: Int) {
        let counts = try await queue.changeSuspensions(of: sequence, by: change, reason: reason, origin: owner)
        if counts.count == 0 { wakeClaims() }
        return counts
    }

    /// Operation `id` as the database holds it, from any process; see ``SharedStorage/operation(_:)``.
    public func operation(_ id: UUID) async throws -> StoredOperation? {
        try await queue.operation(id)
    }

    /// Where operation `id` stands as the database holds it, from any process; see ``SharedStorage/status(of:)``.
    ///
    /// The database keeps neither an attempt's run time nor the failure before a retry: the status that the process
    /// running the operation reads has them.
    public func status(of id: UUID) async throws -> CallStatus? {
        try await queue.status(of: id)
    }

    /// Sets or releases a hold on an operation, from any process; see ``SharedStorage/hold(_:until:context:)``.
    ///
    /// The fleet's event log announces it to every process but this one when this process holds the operation.
    public func hold(_ id: UUID, until: Date?, context: String?) async throws {
        let origin = held.withLock { $0[id] != nil } ? owner : nil
        try await queue.hold(id, until: until, context: context, origin: origin)
    }

    /// Cancels an operation this process does not hold, from any process; see ``SharedStorage/cancel(_:)``.
    ///
    /// One that waits ends cancelled before this returns, its dependents with it; for one that runs elsewhere, this
    /// returns once the request is committed, and the handle settles when the process that runs it has cancelled it.
    public func cancel(_ id: UUID) async throws -> Bool {
        try await queue.cancel(id)
    }

    /// Commits what was gathered, and gives back the claims this process still holds: a claim whose attempt began
    /// counted, one never begun uncounted.
    ///
    /// Each step waits for the database until the deadline at most: what it could not record is left to the leases,
    /// which expire.
    ///
    /// - Throws: ``RelayError/Code/storageFailure`` when the claims could not be given back.
    public func close() async throws {
        let last = commits.appended
        try await waitUntilDurable(StorageTicket(position: last))
        commits.close()
        let claims = held.withLock { held in
            defer { held = [:] }
            return held
        }
        let begun = claims.filter(\.value.began).map(\.key)
        let unbegun = claims.filter { !$0.value.began }.map(\.key)
        if !begun.isEmpty { _ = try await queue.giveBack(begun, owner: owner, counted: true) }
        if !unbegun.isEmpty { _ = try await queue.giveBack(unbegun, owner: owner, counted: false) }
    }
}

extension Storage where Self == PostgresFleetStorage {
    /// A store on a PostgreSQL database that every process of a fleet opens; see ``PostgresFleetStorage``.
    ///
    /// - Parameters:
    ///   - client: A client of the database, running for as long as the DataPoint does.
    ///   - options: How the store claims and keeps operations.
    /// - Returns: The store.
    public static func postgresFleet(
        _ client: PostgresClient, options: PostgresFleetStorage.Options = .init()
    ) -> PostgresFleetStorage {
        PostgresFleetStorage(client: client, options: options)
    }
}
