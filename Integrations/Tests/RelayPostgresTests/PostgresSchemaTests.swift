import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Testing

/// The schema's migrations, on a real server: created once, moved forward once, never written by an older build.
@Suite(
    "S26 the schema and its migrations", .serialized, .timeLimit(.minutes(1)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresSchemaTests {
    private static func version(_ client: PostgresClient) async throws -> Int? {
        var found: Int?
        for try await version in try await client.query("SELECT version FROM relay_schema").decode(Int.self) {
            found = version
        }
        return found
    }

    private static func storeIDs(_ client: PostgresClient) async throws -> [UUID] {
        var ids: [UUID] = []
        for try await id in try await client.query("SELECT id FROM relay_store").decode(UUID.self) { ids.append(id) }
        return ids
    }

    @Test("S26: a new database gets Relay's tables at this build's version, and a second migration changes nothing")
    func migratesOnce() async throws {
        try await TestDatabase.with { client, _ in
            let first = try await PostgresSchema.migrate(client)
            #expect(first.from == 0 && first.to == PostgresSchema.currentVersion)
            #expect(first.description == "Relay schema version 0 → \(PostgresSchema.currentVersion)")
            #expect(try await Self.version(client) == PostgresSchema.currentVersion)
            let store = try await Self.storeIDs(client)
            #expect(store.count == 1)
            let second = try await PostgresSchema.migrate(client)
            #expect(second.changedNothing)
            #expect(try await Self.storeIDs(client) == store)
        }
    }

    @Test("S26: processes that open one new database at once migrate it exactly once")
    func concurrentMigrations() async throws {
        try await TestDatabase.with { _, database in
            // Four clients, each with its own connections, as four processes would have.
            let reports = try await withThrowingTaskGroup(of: PostgresSchema.Report.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await TestDatabase.withClient(database: database) { try await PostgresSchema.migrate($0) }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(reports.filter { !$0.changedNothing }.count == 1, "\(reports)")
            #expect(reports.allSatisfy { $0.to == PostgresSchema.currentVersion })
            let stores = try await TestDatabase.withClient(database: database) { try await Self.storeIDs($0) }
            #expect(stores.count == 1)
        }
    }

    @Test("S26: a database of a newer schema is refused with a typed error, and left as it was")
    func newerSchemaRefused() async throws {
        try await TestDatabase.with { client, _ in
            try await PostgresSchema.migrate(client)
            let newer = PostgresSchema.currentVersion + 1
            try await client.query("UPDATE relay_schema SET version = \(newer)")
            let store = try await Self.storeIDs(client)
            let error = await #expect(throws: RelayError.self) { try await PostgresSchema.migrate(client) }
            #expect(error?.code == .unsupportedFormat)
            #expect(error?.message.contains("version \(newer)") == true, "\(String(describing: error))")
            #expect(try await Self.version(client) == newer)
            #expect(try await Self.storeIDs(client) == store)
        }
    }

    @Test("S26: an enqueue looks each id up by key, even on a plan its connection made while the table was small")
    func storedIdsLookedUpByKey() async throws {
        try await TestDatabase.with { client, _ in
            try await PostgresSchema.migrate(client)
            try await client.query("INSERT INTO relay_sequences (name, bunch_size) VALUES ('s', 64)")
            try await client.withTransaction(logger: TestDatabase.logger) { connection in
                // A connection plans a function's statements once: these calls make the plans on a small table.
                for _ in 0..<10 { #expect(try await Self.enqueue(Self.newIDs(), on: connection)) }
                try await connection.query(
                    """
                    INSERT INTO relay_operations (id, sequence, snapshot, ordinal, priority, state, run_anyway, body)
                    SELECT gen_random_uuid(), 's', 0, n, 0, 1, false, '' FROM generate_series(1, 5000) AS n
                    """, logger: connection.logger)
                var stored: [UUID] = []
                for try await id in try await connection.query(
                    "SELECT id FROM relay_operations ORDER BY id LIMIT 1", logger: connection.logger
                ).decode(UUID.self) {
                    stored.append(id)
                }
                let before = try await Self.sequentialScans(on: connection)
                for _ in 0..<5 { #expect(try await Self.enqueue(Self.newIDs(), on: connection)) }
                // A commit naming a stored id is still found out, and not written.
                #expect(try await !Self.enqueue(stored + Self.newIDs(), on: connection))
                #expect(try await Self.sequentialScans(on: connection) == before)
            }
        }
    }

    private static func newIDs() -> [UUID] { (0..<10).map { _ in UUID() } }

    /// Calls `relay_enqueue` for new operations of sequence `s` with `ids`; whether it wrote them.
    private static func enqueue(_ ids: [UUID], on connection: PostgresConnection) async throws -> Bool {
        let count = Int32(ids.count)
        var written = false
        for try await row in try await connection.query(
            """
            SELECT commit_written FROM relay_enqueue(
                NULL::uuid, \(ids), array_fill('s'::text, ARRAY[\(count)]),
                (SELECT array_agg(n) FROM generate_series(1, \(count)) AS n), array_fill(0::bigint, ARRAY[\(count)]),
                array_fill(1::smallint, ARRAY[\(count)]), array_fill(0, ARRAY[\(count)]),
                array_fill(false, ARRAY[\(count)]), array_fill(''::bytea, ARRAY[\(count)]),
                array_fill(NULL::text, ARRAY[\(count)]), '{}'::uuid[], '{}'::uuid[], '{}'::uuid[], '{}'::timestamptz[])
            """, logger: connection.logger
        ).decode(Bool.self) {
            written = row
        }
        return written
    }

    /// The sequential scans of `relay_operations` in the connection's transaction so far.
    private static func sequentialScans(on connection: PostgresConnection) async throws -> Int64 {
        var scans: Int64 = -1
        for try await count in try await connection.query(
            "SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'relay_operations'",
            logger: connection.logger
        ).decode(Int64.self) {
            scans = count
        }
        return scans
    }

    @Test("S31: a migration that waits for another process's migration fails at its deadline, changing nothing")
    func migrationWaitEnds() async throws {
        try await TestDatabase.with { client, _ in
            let (released, release) = AsyncStream<Void>.makeStream()
            let (locked, lock) = AsyncStream<Void>.makeStream()
            let clock = ManualClock()
            try await withThrowingTaskGroup(of: Void.self) { group in
                // Another process's migration: the lock taken, its transaction open until the test releases it.
                group.addTask {
                    try await client.withTransaction(logger: TestDatabase.logger) { connection in
                        try await connection.query(
                            "SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: connection.logger)
                        lock.finish()
                        for await _ in released { break }
                    }
                }
                // The lock is the other process's before this one asks for it.
                for await _ in locked {}
                let error = await #expect(throws: RelayError.self) {
                    try await withThrowingTaskGroup(of: Void.self) { attempt in
                        attempt.addTask {
                            try await PostgresSchema.migrate(client, deadline: .seconds(30), clock: clock)
                        }
                        try await Self.waitForLockWaiter(client)
                        await clock.waitForSleepers(1)
                        clock.advance(by: .seconds(30))
                        try await attempt.waitForAll()
                    }
                }
                #expect(error?.code == .storageFailure)
                #expect(error?.message.contains("within 30.0 seconds") == true, "\(String(describing: error))")
                release.finish()
                try await group.waitForAll()
            }
            var created = false
            for try await exists in try await client.query("SELECT to_regclass('relay_schema') IS NOT NULL")
                .decode(Bool.self)
            {
                created = exists
            }
            #expect(!created)
            #expect(try await PostgresSchema.migrate(client).from == 0)
        }
    }

    /// The key of the lock that migrations take: "relay" in ASCII.
    private static let migrationLock: Int64 = 0x72_656c_6179

    /// Returns once a session of the test's database waits for an advisory lock.
    ///
    /// The database tells no one that a session waits for a lock, so a statement of its own looks until one does, for
    /// at most 30 seconds.
    private static func waitForLockWaiter(_ client: PostgresClient) async throws {
        try await client.withTransaction(logger: TestDatabase.logger) { connection in
            try await connection.query("SET LOCAL statement_timeout = '30s'", logger: connection.logger)
            try await connection.query(
                """
                DO $$ BEGIN
                    WHILE NOT EXISTS (
                        SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                        WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database()
                    ) LOOP
                        PERFORM pg_sleep(0.01);
                    END LOOP;
                END $$
                """, logger: connection.logger)
        }
    }

    @Test("S26: a server that cannot be reached is a typed storage failure at the deadline, not a wait for ever")
    func unreachableServer() async throws {
        let username = try TestDatabase.configuration(database: "postgres").username
        // A port that nothing listens on: the one a listener had a moment ago, now closed.
        var configuration = PostgresClient.Configuration(
            host: "127.0.0.1", port: try Self.closedPort(), username: username, password: nil, database: "postgres",
            tls: .disable)
        configuration.options.connectTimeout = .seconds(1)
        let client = PostgresClient(configuration: configuration)
        let clock = ManualClock()
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let error = await #expect(throws: RelayError.self) {
                try await withThrowingTaskGroup(of: Void.self) { attempt in
                    attempt.addTask { try await PostgresSchema.migrate(client, deadline: .seconds(30), clock: clock) }
                    await clock.waitForSleepers(1)
                    clock.advance(by: .seconds(30))
                    try await attempt.waitForAll()
                }
            }
            #expect(error?.code == .storageFailure)
            #expect(
                error?.message.contains("did not answer within 30.0 seconds") == true, "\(String(describing: error))")
        }
    }

    /// A loopback port that was free a moment ago.
    private static func closedPort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(socket, generic, length) == 0 && getsockname(socket, generic, &length) == 0
            }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
