import Logging
import PostgresNIO
import Relay

/// The tables RelayPostgres keeps in a database, created and moved forward by numbered migrations.
///
/// Every process that opens a store migrates it first, in one transaction under a lock of the database's own
/// (`pg_advisory_xact_lock`), so that processes starting at once apply each migration exactly once, and a migration
/// that fails leaves the database as it was. A database whose schema is newer than this build is refused with
/// ``RelayError/Code/unsupportedFormat``, and nothing in it is changed: an older process must never write to tables it
/// does not know.
///
/// ```swift
/// let report = try await PostgresSchema.migrate(client)
/// print(report)  // "Relay schema version 0 → 1"
/// ```
public enum PostgresSchema {
    /// The schema version this build reads and writes.
    public static var currentVersion: Int { migrations.count }

    /// What a migration did.
    public struct Report: Sendable, Hashable, CustomStringConvertible {
        /// The version the database had; 0 for a database without Relay's tables.
        public let from: Int
        /// The version it has now.
        public let to: Int

        /// Whether the database was already at this build's version.
        public var changedNothing: Bool { from == to }

        /// `Relay schema version 0 → 1`, or `Relay schema version 1, current` when nothing changed.
        public var description: String {
            changedNothing ? "Relay schema version \(to), current" : "Relay schema version \(from) → \(to)"
        }
    }

    /// Creates Relay's tables, or moves them forward to ``currentVersion``, in one transaction.
    ///
    /// - Parameters:
    ///   - client: A running client (its `run()` is under way in a task of the caller's).
    ///   - deadline: How long to wait for the database, connecting included; 30 seconds by default.
    ///   - clock: The clock of the deadline.
    ///   - logger: Where the client logs the queries; nothing by default.
    /// - Returns: The versions before and after.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unsupportedFormat`` when the database's schema is newer than
    ///   this build, or ``RelayError/Code/storageFailure`` when the database fails or does not answer by the
    ///   deadline; the database is unchanged then.
    @discardableResult
    public static func migrate(
        _ client: PostgresClient,
        deadline: Duration = .seconds(30),
        clock: some Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "RelayPostgres")
    ) async throws -> Report {
        try await migrate(client, deadline: deadline, clock: clock as any Clock<Duration>, logger: logger)
    }

    /// Migrates on a connection of `client`, failing once `deadline` has passed on `clock`.
    @discardableResult
    static func migrate(
        _ client: PostgresClient, deadline: Duration, clock: any Clock<Duration>, logger: Logger
    ) async throws -> Report {
        let queue = PostgresQueue(client: client, logger: logger, deadline: deadline, clock: clock)
        // Through the queue's guards: a connection lost while the migration waits must not leave it waiting for ever.
        return try await queue.transaction("migrating the Relay schema") { connection in
            try await migrate(in: queue.guards.guarding(connection), logger: logger)
        }
    }

    /// Migrates on a store's own connection, through its guard, in one transaction of its own.
    @discardableResult
    static func migrate(_ guarded: PostgresQueryGuard, logger: Logger) async throws -> Report {
        try await PostgresQueue.mapping("migrating the Relay schema") {
            try await guarded.transaction(logger: logger) { try await migrate(in: guarded, logger: logger) }
        }
    }

    /// How long a store's migration waits for the database at least, for another process's migration included.
    static let deadline = Duration.seconds(30)

    /// The migration itself, inside the caller's transaction.
    private static func migrate(in connection: PostgresQueryGuard, logger: Logger) async throws -> Report {
        // Concurrent migrators wait here for the first one's transaction to end, then see its version.
        try await connection.run("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
        try await connection.run(
            """
            CREATE TABLE IF NOT EXISTS relay_schema (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                version integer NOT NULL CHECK (version >= 0)
            )
            """, logger: logger)
        var found = 0
        for row in try await connection.result(of: "SELECT version FROM relay_schema", logger: logger).rows {
            found = try row.decode(Int.self)
        }
        guard found <= currentVersion else {
            throw RelayError(
                .unsupportedFormat,
                "the database's Relay schema is version \(found), newer than version \(currentVersion) that this "
                    + "build knows: run a newer RelayPostgres against it")
        }
        for migration in migrations.dropFirst(found) {
            for statement in migration.statements {
                try await connection.run(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        }
        if found < currentVersion {
            let version = currentVersion
            try await connection.run(
                """
                INSERT INTO relay_schema (singleton, version) VALUES (true, \(version))
                ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version
                """, logger: logger)
        }
        return Report(from: found, to: currentVersion)
    }

    /// The key of the advisory lock that migrations take: "relay" in ASCII, so that it is recognisable in
    /// `pg_locks`.
    static let lockKey: Int64 = 0x72_656c_6179

    /// One step of the schema: the statements that take a database from the version before to this one.
    struct Migration {
        let summary: String
        let statements: [String]
    }

    /// Every migration, in order: the one at index `i` takes a database from version `i` to `i + 1`.
    static let migrations: [Migration] = [
        Migration(
            summary: "the store's identity",
            statements: [
                """
                CREATE TABLE relay_store (
                    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                    id uuid NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now()
                )
                """,
                "INSERT INTO relay_store (id) VALUES (gen_random_uuid())",
            ]),
        Migration(
            summary: "the records of one DataPoint, in the order they were written",
            statements: [
                """
                CREATE TABLE relay_records (
                    position bigserial PRIMARY KEY,
                    kind text NOT NULL,
                    body bytea NOT NULL,
                    written_at timestamptz NOT NULL DEFAULT now()
                )
                """
            ]),
        Migration(
            summary: "the fleet's queue: a row per operation, its dependencies, its sequences, and the counters",
            statements: [
                // Snapshot numbers and the whole DataPoint's suspensions, fleet-wide. Enqueues take this row's lock,
                // so that commits become visible in the order of their numbers.
                """
                CREATE TABLE relay_counters (
                    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                    snapshot bigint NOT NULL DEFAULT 0 CHECK (snapshot >= 0),
                    suspensions integer NOT NULL DEFAULT 0 CHECK (suspensions >= 0)
                )
                """,
                "INSERT INTO relay_counters DEFAULT VALUES",
                // `running` counts the sequence's claimed operations, fleet-wide, under the row's lock.
                """
                CREATE TABLE relay_sequences (
                    name text PRIMARY KEY,
                    bunch_size integer NOT NULL CHECK (bunch_size >= 1),
                    commit_graph boolean NOT NULL DEFAULT false,
                    suspensions integer NOT NULL DEFAULT 0 CHECK (suspensions >= 0),
                    running integer NOT NULL DEFAULT 0 CHECK (running >= 0)
                )
                """,
                // `state`: 0 blocked by dependencies, 1 pending, 2 running, 3 completed, 4 skipped, 5 failed,
                // 6 cancelled. `attempts` counts claims; with `owner` it fences the outcome of a running one.
                """
                CREATE TABLE relay_operations (
                    id uuid PRIMARY KEY,
                    sequence text NOT NULL,
                    snapshot bigint NOT NULL,
                    ordinal integer NOT NULL,
                    priority bigint NOT NULL,
                    state smallint NOT NULL CHECK (state BETWEEN 0 AND 6),
                    blockers integer NOT NULL DEFAULT 0 CHECK (blockers >= 0),
                    run_anyway boolean NOT NULL,
                    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
                    owner uuid,
                    lease_until timestamptz,
                    available_at timestamptz,
                    enqueued_at timestamptz NOT NULL DEFAULT now(),
                    started_at timestamptz,
                    finished_at timestamptz,
                    body bytea NOT NULL,
                    result bytea
                )
                """,
                """
                CREATE INDEX relay_operations_pending ON relay_operations (sequence, priority DESC, snapshot, ordinal)
                WHERE state = 1
                """,
                "CREATE INDEX relay_operations_running ON relay_operations (lease_until) WHERE state = 2",
                "CREATE INDEX relay_operations_unfinished ON relay_operations (sequence, snapshot) WHERE state < 3",
                """
                CREATE TABLE relay_dependencies (
                    dependency uuid NOT NULL,
                    dependent uuid NOT NULL,
                    PRIMARY KEY (dependency, dependent)
                )
                """,
                completeFunction,
            ]),
        Migration(
            summary: "cancellation requested of an operation that another process runs",
            statements: [
                // Set by a cancel from any process while the operation runs; its owner cancels the attempt, and a
                // claim of it later records it cancelled instead of running it.
                "ALTER TABLE relay_operations ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false"
            ]),
        Migration(
            summary: "outcomes free their sequences' slots in name order; a commit of new operations in one call",
            statements: [completeFunction, enqueueFunction]),
        Migration(
            summary: "holds set from any process: each context's end, and the latest of them, which claims obey",
            statements: [
                // `holds` maps `-` (no context) or `+context` to an end in seconds since 1970; `held_until` is the
                // latest, or NULL, kept with it so that a claim reads one column.
                """
                ALTER TABLE relay_operations ADD COLUMN holds jsonb NOT NULL DEFAULT '{}'::jsonb,
                    ADD COLUMN held_until timestamptz
                """
            ]),
        Migration(
            summary: "the fleet's event log, written by triggers, followed by every process",
            statements: eventStatements),
        Migration(
            summary: "finished operations found by when they finished, for retention",
            statements: [
                "CREATE INDEX relay_operations_finished ON relay_operations (state, finished_at) WHERE state >= 3"
            ]),
        Migration(
            summary: "the event log no longer copies outcomes", statements: eventsWithoutResults),
        Migration(
            summary: "outcomes release dependents only when an ended operation has one",
            statements: [completeFunction(lookingForDependents: true)]),
        Migration(summary: "the fleet's document: models and key-values", statements: modelStatements),
        Migration(summary: "the fleet's document: relations, by the models they name", statements: relationStatements),
        Migration(
            summary: "the fleet's document: pruned removals, rows in reading order", statements: horizonStatements),
        Migration(summary: "offline destinations, kept for the whole fleet", statements: destinationStatements),
        Migration(summary: "the event log indexed for its readers alone", statements: leanEventStatements),
        Migration(summary: "the claim in one call, planned once a connection", statements: claimStatements),
        Migration(summary: "how long finished operations ran, for the fleet's metrics", statements: runTimeStatements),
        Migration(
            summary: "suspensions, resumes and offline destinations in the event log",
            statements: sequenceEventStatements),
        Migration(
            summary: "ids looked up one by one, whatever the table's statistics", statements: probingStatements),
        Migration(
            summary: "claims and outcomes in one round trip each, committed before they answer",
            statements: procedureStatements),
        Migration(
            summary: "a commit of new operations in one round trip, committed before it answers",
            statements: enqueueProcedureStatements),
    ]
}
