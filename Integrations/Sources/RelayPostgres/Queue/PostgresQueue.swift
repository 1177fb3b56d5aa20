import Foundation
import Logging
import NIOCore
import PostgresNIO
import Relay

/// The fleet's queue in SQL: a row per operation, claimed in batches under leases, its outcome fenced by owner and
/// attempt, its dependents released under their own rows' locks.
///
/// Every process of a fleet runs the same statements on one database, and the database arbitrates: a sequence's row is
/// locked while operations of it are claimed, so that its bunch size holds fleet-wide and its operations start in the
/// order of S4 (priority, then snapshot, then position in the commit); a claim skips sequences another process is
/// claiming from (`FOR UPDATE SKIP LOCKED`) rather than waiting for it. Times come from the database's clock, the one
/// clock every process of the fleet shares.
///
/// Every transaction that takes rows of both tables takes them in one order, so that no two wait for each other: the
/// sequences' rows first, by name, then the operations', by id. A claim takes its sequences' rows without waiting
/// (`SKIP LOCKED`), then the operations it starts, which may wait; so a transaction that waits for a sequence's row
/// must not hold an operation's row meanwhile.
///
/// New work and finished work are announced with `NOTIFY` inside the transaction that makes them visible: channel
/// ``readyChannel`` when operations may be claimed, ``finishedChannel`` with the ids of operations that ended.
struct PostgresQueue: Sendable {
    let client: PostgresClient
    let logger: Logger
    /// How long a call waits for the database, for a connection of the pool included, before it fails.
    let deadline: Duration
    /// Sleeps on the clock of deadlines.
    let sleep: @Sendable (Duration) async throws -> Void
    /// Every query goes through its connection's guard, so that none waits for ever on a connection that closed.
    let guards = PostgresGuards()

    /// A queue on the database that `client` reaches, whose calls fail once `deadline` has passed on `clock`.
    init(
        client: PostgresClient, logger: Logger, deadline: Duration = .seconds(30),
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.client = client
        self.logger = logger
        self.deadline = deadline
        sleep = { try await clock.sleep(for: $0) }
    }

    /// Announces that operations may be claimed.
    static let readyChannel = "relay_ready"
    /// Announces that operations ended; the payload is their ids, separated by commas.
    static let finishedChannel = "relay_finished"

    /// An operation claimed for one attempt: `attempt` fences the outcome.
    struct Claim: Sendable, Hashable {
        let operation: CallOperation
        let snapshot: UInt64
        let attempt: Int
        let enqueuedAt: Date
        /// When its first claim took it, by the database's clock: a retry policy's elapsed time counts from there,
        /// whichever process ran the attempts before.
        var firstStartedAt: Date? = nil
        /// Whether a process asked to cancel the operation while an earlier claim ran it: the claimer records it
        /// cancelled instead of running it.
        var cancelRequested = false
    }

    /// Announces that a process asked to cancel a running operation; the payload is its id.
    static let cancelChannel = "relay_cancel"
    /// Announces that the event log has grown.
    static let eventsChannel = "relay_events"
    /// Announces that the document changed.
    static let modelsChannel = "relay_models"

    /// What one commit did.
    struct Enqueued: Sendable, Hashable {
        /// The commit's snapshot number, fleet-wide.
        let snapshot: UInt64
        /// The operations the commit added, in call order; those already known (S1) are not among them.
        let added: [UUID]
        /// The outcomes its operations have already: known ones that finished, new ones added cancelled.
        var outcomes: [UUID: CallResult] = [:]
        /// The document changes it made, cascades included.
        var changes: [ModelChange] = []
    }

    /// Runs `body` on a connection of the client, in a transaction of its own, mapping what fails it to a
    /// ``RelayError``.
    ///
    /// The database answers a statement before the implicit transaction around it commits, and a connection lost
    /// between the two leaves an answer for what never happened; so every write of the queue runs in a transaction
    /// of its own (``write(_:_:)`` for one statement), whose `COMMIT` is answered once it is durable.
    func transaction<Value: Sendable>(
        _ what: String, within deadline: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Value
    ) async throws -> Value {
        try await withConnection(what, within: deadline) { connection in
            try await guards.guarding(connection).transaction(logger: logger) { try await body(connection) }
        }
    }

    /// The rows of one statement that writes, run in a transaction of its own; see ``transaction(_:_:)``.
    func write(_ what: String, _ query: PostgresQuery) async throws -> [PostgresRow] {
        try await transaction(what) { connection in try await rows(query, on: connection) }
    }

    /// The answer of a procedure that commits its own transaction, called outside a transaction block: one round trip
    /// where ``write(_:_:)`` takes three, answered once its `COMMIT` is durable (see
    /// ``PostgresSchema/procedureStatements``).
    ///
    /// A connection found lost by the call is lent again, as by a `BEGIN` (see ``PostgresQueryGuard/opening(_:)``):
    /// unlike a `BEGIN`, the call may have committed before the answer was lost, which leaves what a `COMMIT` whose
    /// answer was lost leaves, and every caller's call is safe to make again: a claim made twice holds what the first
    /// took until its lease expires, and an outcome recorded once is refused the next time.
    func committing(_ what: String, _ query: PostgresQuery) async throws -> PostgresRow {
        let answer: [PostgresRow] = try await withConnection(what) { connection in
            try await guards.guarding(connection).opening { try await rows(query, on: connection) }
        }
        return try Self.first(of: answer, what)
    }

    /// The answer of a procedure that commits its own transaction, as ``committing(_:_:)`` gives it, or `nil` when the
    /// call found its connection lost: it may have committed before its answer was lost, and the caller finds out in
    /// a transaction rather than make the call again.
    func committingUnlessLost(_ what: String, _ query: PostgresQuery) async throws -> PostgresRow? {
        let answer: [PostgresRow]? = try await withConnection(what) { connection in
            do {
                return try await guards.guarding(connection).opening { try await rows(query, on: connection) }
            } catch is PostgresQueryGuard.Unsent {
                return nil
            }
        }
        return try answer.map { try Self.first(of: $0, what) }
    }

    /// The row a procedure answers with; a procedure always answers with one.
    private static func first(of answer: [PostgresRow], _ what: String) throws -> PostgresRow {
        guard let row = answer.first else { throw RelayError(.storageFailure, "\(what): the database did not answer") }
        return row
    }

    /// The rows of a statement that only reads, on a connection of the client.
    func read(_ what: String, _ query: PostgresQuery) async throws -> [PostgresRow] {
        try await withConnection(what) { connection in
            try await guards.guarding(connection).opening { try await rows(query, on: connection) }
        }
    }

    /// Runs `body` on a connection of the client, mapping what fails it to a ``RelayError``, or fails with
    /// ``RelayError/Code/storageFailure`` once the deadline has passed.
    ///
    /// A database that refuses connections leaves the pool's requests waiting until its circuit breaker trips, a
    /// minute or more later; the deadline abandons the request instead. A query already sent is abandoned too, and
    /// its connection closed (see ``PostgresQueryGuard``).
    private func withConnection<Value: Sendable>(
        _ what: String, within deadline: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Value
    ) async throws -> Value {
        try await PostgresDeadline.run(what, within: deadline ?? self.deadline, sleeping: sleep) {
            try await Self.mapping(what) {
                // A pool learns that a connection closed a moment after it stopped, and may lend it until then; the
                // call sent nothing on it, and asks again once the pool knows.
                for _ in 1..<Self.lendings {
                    do { return try await client.withConnection(body) } catch is PostgresQueryGuard.Unsent {}
                }
                do { return try await client.withConnection(body) } catch is PostgresQueryGuard.Unsent {
                    throw RelayError(.storageFailure, "\(what): every connection the pool lent was closing")
                }
            }
        }
    }

    /// How many connections one call may be lent before it fails: each closed one sent nothing.
    private static let lendings = 8

    /// The rows of `query` on `connection`, answered, or failed once the connection closes.
    func rows(_ query: PostgresQuery, on connection: PostgresConnection) async throws -> [PostgresRow] {
        try await guards.guarding(connection).result(of: query, logger: logger).rows
    }

    /// The value of `body`, with a failure that is not a ``RelayError`` given back as
    /// ``RelayError/Code/storageFailure`` naming `what` failed.
    static func mapping<Value>(_ what: String, _ body: () async throws -> Value) async throws -> Value {
        do {
            return try await body()
        } catch let error as RelayError {
            throw error
        } catch {
            throw RelayError(.storageFailure, "\(what) failed in the database: \(String(reflecting: error))")
        }
    }

    // MARK: - Claims

    /// What a claim asks for: up to `limit` operations of each sequence that has free slots (only of `sequences` when
    /// given), in start order, for `owner`, each for one attempt under a lease of `lease` from now.
    ///
    /// Operations whose destination is offline are passed over; with `probing`, an offline destination whose probe
    /// is due, one operation of it is claimed instead, as its probe, which holds the destination for the lease.
    struct ClaimRequest: Sendable, Hashable {
        var owner: UUID
        var sequences: [CallSequence.Name]? = nil
        var limit: Int
        var lease: Duration
        var probing: String? = nil
    }

    /// Claims what `request` asks for, in a transaction of its own.
    ///
    /// - Returns: The claims, each sequence's in start order.
    func claim(_ request: ClaimRequest) async throws -> [Claim] {
        let names = request.sequences?.map(\.rawValue)
        return try await Self.mapping("claiming operations") {
            try Self.claims(
                in: try await committing(
                    "claiming operations",
                    """
                    CALL relay_claim_committing(
                        \(request.owner), \(names)::text[], \(request.limit)::integer,
                        \(request.lease.seconds)::double precision, \(request.probing)::text,
                        NULL, NULL, NULL, NULL, NULL, NULL)
                    """), from: 0)
        }
    }

    /// Claims what `request` asks for, inside the transaction on `connection`.
    func claim(_ request: ClaimRequest, on connection: PostgresConnection) async throws -> [Claim] {
        try Self.claims(in: try await rows(Self.claiming(request), on: connection))
    }

    /// The call of `relay_claim` that `request` makes.
    private static func claiming(_ request: ClaimRequest) -> PostgresQuery {
        let names = request.sequences?.map(\.rawValue)
        return """
            SELECT snapshot, attempts, body, enqueued_at, cancel_requested, started_at FROM relay_claim(
                \(request.owner), \(names)::text[], \(request.limit)::integer,
                \(request.lease.seconds)::double precision, \(request.probing)::text)
            """
    }

    /// The claims in the arrays of a procedure's answer from column `first` on: those of `relay_claim`'s rows.
    static func claims(in row: PostgresRow, from first: Int) throws -> [Claim] {
        let columns = Array(row)
        let snapshots = try columns[first].decode([Int64].self)
        let attempts = try columns[first + 1].decode([Int32].self)
        let bodies = try columns[first + 2].decode([ByteBuffer].self)
        let enqueued = try columns[first + 3].decode([Date].self)
        let cancels = try columns[first + 4].decode([Bool].self)
        let starts = try columns[first + 5].decode([Date].self)
        return try snapshots.indices.map { index in
            try Claim(
                body: bodies[index], snapshot: snapshots[index], attempts: attempts[index], enqueuedAt: enqueued[index],
                startedAt: starts[index], cancelRequested: cancels[index])
        }
    }

    /// The claims that the rows of `relay_claim` hold.
    private static func claims(in rows: [PostgresRow]) throws -> [Claim] {
        try rows.map { row in
            let (snapshot, attempts, body, enqueuedAt, cancelRequested, startedAt) = try row.decode(
                (Int64, Int32, ByteBuffer, Date, Bool, Date?).self)
            return try Claim(
                body: body, snapshot: snapshot, attempts: attempts, enqueuedAt: enqueuedAt, startedAt: startedAt,
                cancelRequested: cancelRequested)
        }
    }
}

extension PostgresQueue.Claim {
    /// A claim as `relay_claim` answers it, its operation decoded from the row's body.
    fileprivate init(
        body: ByteBuffer, snapshot: Int64, attempts: Int32, enqueuedAt: Date, startedAt: Date?, cancelRequested: Bool
    ) throws {
        self.init(
            operation: try CallOperation(encoded: Data(body.readableBytesView)), snapshot: UInt64(snapshot),
            attempt: Int(attempts), enqueuedAt: enqueuedAt, firstStartedAt: startedAt, cancelRequested: cancelRequested)
    }
}

extension Duration {
    /// The duration in seconds, as SQL's `make_interval(secs => …)` takes it.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in whole nanoseconds, as a `bigint` column keeps it.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
