import Foundation
import Logging
import NIOCore
import PostgresNIO
import Relay
import Synchronization

/// A DataPoint's store in a PostgreSQL database: its records in a table, each batch of them in one statement that the
/// database commits before anything it holds is acknowledged.
///
/// ```swift
/// let configuration = PostgresConnection.Configuration(
///     host: "db.internal", username: "relay", password: password, database: "orders", tls: .disable)
/// try await DataPoint.with(storage: .postgres(configuration)) { point in
///     try await point.execute(HTTPCall(method: .post, url: webhookURL, body: .data(payload)))
/// }
/// ```
///
/// Opening it migrates the database's schema (see ``PostgresSchema``), then takes a lock of the database's own for
/// the store, held by the store's connection: one process at a time runs a DataPoint on a database, and another that
/// opens it meanwhile gets ``RelayError/Code/storeLocked``. A process that dies lets the lock go with its connection.
/// Running one DataPoint on several processes at once is being built (the Guarantees article's S26 to S31).
///
/// Writes are group commits: the first task that waits for records not yet written writes everything gathered so far,
/// and hands what was gathered meanwhile to the next task that waits. A write that fails fails the store for good:
/// every wait then throws ``RelayError/Code/storageFailure``, and nothing more is acknowledged. The store's connection
/// is its own, not a pool's, so that a write in flight ends even when the task that waits for it is cancelled.
///
/// Reopening replays every record; a store on PostgreSQL does not yet fold its records into snapshots as the file
/// store does.
public final class PostgresStorage: Storage {
    private let configuration: PostgresConnection.Configuration
    private let logger: Logger
    private let connection = Mutex<PostgresConnection?>(nil)
    private let writes = Mutex<PostgresQueryGuard?>(nil)
    private let commits = PostgresGroupCommit<PostgresLogEntry>()

    /// The key of the advisory lock that the store's connection holds while it is open: "relay.st" in ASCII.
    public static let ownerKey: Int64 = 0x7265_6c61_792e_7374

    /// A store in the database that `configuration` names.
    ///
    /// - Parameters:
    ///   - configuration: Where the database is, and who connects.
    ///   - logger: Where the connection logs; nothing by default.
    public init(configuration: PostgresConnection.Configuration, logger: Logger = Logger(label: "RelayPostgres")) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Opens the store, keeping no more finished operations than the DataPoint's retention says.
    ///
    /// - Parameter retention: The DataPoint's policy.
    /// - Returns: The state its records hold.
    /// - Throws: ``RelayError`` with ``RelayError/Code/storeLocked`` when another process holds the store,
    ///   ``RelayError/Code/unsupportedFormat`` for a newer schema, ``RelayError/Code/corruptStore`` for a record that
    ///   does not read back, or ``RelayError/Code/storageFailure`` when the database cannot be reached.
    public func open(retention: RetentionPolicy) async throws -> StoredState {
        try await load(retention)
    }

    /// Opens the store, keeping every finished operation; see ``open(retention:)``.
    ///
    /// - Returns: The state its records hold.
    /// - Throws: As ``open(retention:)`` does.
    public func open() async throws -> StoredState {
        try await load(nil)
    }

    private func load(_ retention: RetentionPolicy?) async throws -> StoredState {
        let opened: PostgresConnection
        do {
            opened = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        } catch {
            throw RelayError(
                .storageFailure, "cannot connect to the Relay store's database: \(String(reflecting: error))")
        }
        let guarded = PostgresQueryGuard(opened, abandonsWhenCancelled: false)
        do {
            try await PostgresSchema.migrate(guarded, logger: logger)
            var held = false
            let lock = try await opened.query("SELECT pg_try_advisory_lock(\(Self.ownerKey))", logger: logger)
            for try await locked in lock.decode(Bool.self) { held = locked }
            guard held else {
                throw RelayError(
                    .storeLocked,
                    "another process holds the Relay store in this database; it is free again once that process "
                        + "closes its DataPoint or ends")
            }
            var replay = StoredState.Replay(retention: retention)
            let records = try await opened.query("SELECT body FROM relay_records ORDER BY position", logger: logger)
            for try await body in records.decode(ByteBuffer.self) {
                replay.apply(try StorageRecord(encoded: Data(body.readableBytesView)))
            }
            connection.withLock { $0 = opened }
            writes.withLock { $0 = guarded }
            return replay.state(retention: retention)
        } catch {
            try? await opened.close()
            if let error = error as? RelayError { throw error }
            throw RelayError(.storageFailure, "the Relay store could not be read: \(String(reflecting: error))")
        }
    }

    /// Gathers records for the next write; see ``Storage/append(_:)``.
    ///
    /// - Parameter records: The transitions, oldest first.
    /// - Returns: The ticket of the last one.
    public func append(_ records: [StorageRecord]) -> StorageTicket {
        commits.append(records.map { PostgresLogEntry(kind: $0.kind.description, body: $0.encoded()) })
    }

    /// Returns once the records up to `ticket` are committed, writing them if no write is in flight.
    ///
    /// - Parameter ticket: A ticket from ``append(_:)``.
    /// - Throws: ``RelayError/Code/storageFailure`` once a write has failed.
    public func waitUntilDurable(_ ticket: StorageTicket) async throws {
        try await commits.waitUntilDurable(ticket) { try await write($0) }
    }

    /// Writes a batch in one statement, in a transaction of its own: the database answers a statement before the
    /// implicit transaction around it commits, and only the answer to `COMMIT` says that the batch is durable.
    private func write(_ batch: PostgresBatch<PostgresLogEntry>) async throws {
        guard let writes = writes.withLock({ $0 }) else {
            throw RelayError(.storageFailure, "the Relay store is not open")
        }
        let kinds = batch.items.map(\.kind)
        let bodies = batch.items.map { ByteBuffer(bytes: $0.body) }
        try await writes.run("BEGIN", logger: logger)
        try await writes.run(
            """
            INSERT INTO relay_records (kind, body)
            SELECT kind, body FROM unnest(\(kinds)::text[], \(bodies)::bytea[]) WITH ORDINALITY
                AS batch (kind, body, n)
            ORDER BY n
            """, logger: logger)
        try await writes.run("COMMIT", logger: logger)
    }

    /// Commits what was gathered, lets the store's lock go and closes the connection.
    ///
    /// - Throws: ``RelayError/Code/storageFailure`` when the last records could not be committed.
    public func close() async throws {
        let last = commits.appended
        var failure: (any Error)?
        do {
            try await waitUntilDurable(StorageTicket(position: last))
        } catch {
            failure = error
        }
        commits.close()
        let guarded = writes.withLock { writes in
            defer { writes = nil }
            return writes
        }
        // Closing the connection lets the lock go too; unlocking first frees it without waiting for the server to
        // notice. Through the write guard, which does not wait on a connection that has closed.
        try? await guarded?.run("SELECT pg_advisory_unlock(\(Self.ownerKey))", logger: logger)
        if let opened = connection.withLock({ connection in
            defer { connection = nil }
            return connection
        }) {
            try? await opened.close()
        }
        if let failure { throw failure }
    }
}

extension Storage where Self == PostgresStorage {
    /// A store in the PostgreSQL database that `configuration` names; see ``PostgresStorage``.
    ///
    /// - Parameters:
    ///   - configuration: Where the database is, and who connects.
    ///   - logger: Where the connection logs; nothing by default.
    /// - Returns: The store.
    public static func postgres(
        _ configuration: PostgresConnection.Configuration, logger: Logger = Logger(label: "RelayPostgres")
    ) -> PostgresStorage {
        PostgresStorage(configuration: configuration, logger: logger)
    }
}
