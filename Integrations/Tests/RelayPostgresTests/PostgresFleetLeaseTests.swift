import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Synchronization
import Testing

/// A process that loses a claim stops the attempt it runs, and records nothing of it.
@Suite(
    "S27 lost leases across a fleet", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetLeaseTests {
    private typealias Fleet = PostgresFleetTests

    @Test("S27: a process whose lease is lost cancels the attempt it runs, records nothing, and may claim it again")
    func lostLeaseStopsAttempt() async throws {
        let calls = Mutex(0)
        let gate = Gate()
        let stopped = Gate()
        let executor = ClosureExecutor { _, context in
            guard
                calls.withLock({
                    $0 += 1
                    return $0
                }) == 1
            else { return .completed(Data("\(context.attempt)".utf8)) }
            await gate.wait()
            if Task.isCancelled { stopped.open() }
            // What a cancelled attempt returns is not recorded: the claim is no longer this process's.
            return .completed(Data("stale".utf8))
        }
        try await TestDatabase.with { client, database in
            try await DataPoint.with(
                storage: PostgresFleetStorage(client: client, options: Fleet.options()),
                executors: [Fleet.work: executor]
            ) { point in
                try await point.upsertCallSequence(CallSequence(name: Fleet.right, bunchSize: 1))
                let operation = CallOperation(kind: Fleet.work, sequenceName: Fleet.right)
                let handle = try await point.enqueue(operation)
                await gate.waitForArrivals(1)
                // Another process took the operation over, as if this one's lease had expired, under a lease of its own
                // that outlasts the test, so that no process reclaims it meanwhile.
                let other = UUID()
                try await Self.execute(
                    """
                    UPDATE relay_operations SET owner = '\(other.uuidString)', attempts = attempts + 1,
                        lease_until = now() + interval '1 hour'
                    WHERE id = '\(operation.id.uuidString)'
                    """, in: database)
                await stopped.wait()
                // Once the stopped attempt has ended here, nothing of it is left to run.
                try await point.idle()
                let untouched = try await Fleet.count(
                    """
                    SELECT count(*) FROM relay_operations WHERE id = '\(operation.id.uuidString)' AND state = 2
                        AND owner = '\(other.uuidString)' AND result IS NULL
                    """, in: database)
                #expect(untouched == 1, "the stopped attempt recorded nothing")
                // The other process gave it back: claimed here again, it runs as a new claim's attempt.
                try await Self.execute(
                    """
                    UPDATE relay_operations SET state = 1, owner = NULL, lease_until = NULL
                    WHERE id = '\(operation.id.uuidString)';
                    UPDATE relay_sequences SET running = running - 1 WHERE name = 'right'
                    """, in: database)
                #expect(try await handle.value == Data("3".utf8), "run again, not taken for the attempt it left")
                #expect(calls.withLock { $0 } == 2)
            }
        }
    }

    /// Runs statements in `database`, as another process would.
    private static func execute(_ sql: String, in database: String) async throws {
        try await TestDatabase.withClient(database: database) { client in
            try await client.withConnection { connection in
                for statement in sql.split(separator: ";") {
                    try await connection.query(PostgresQuery(unsafeSQL: String(statement)), logger: connection.logger)
                }
            }
        }
    }
}
