import Foundation
import PostgresNIO
import Relay
import RelayTesting
import Testing

@testable import RelayPostgres

/// Queries abandoned at their deadline on a pool's connections, on a real server.
@Suite(
    "S31 queries abandoned at their deadline", .timeLimit(.minutes(1)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresQueryGuardTests {
    @Test("S31: a query abandoned at its deadline ends once its connection is closed, and nothing else is sent on it")
    func abandonedConnectionClosedFirst() async throws {
        try await TestDatabase.with { _, database in
            let connection = try await PostgresConnection.connect(
                configuration: TestDatabase.connectionConfiguration(database: database), id: 1,
                logger: TestDatabase.logger)
            let abandoning = PostgresQueryGuard(connection, abandonsWhenCancelled: true)
            let sent = Gate()
            let failure = try await PostgresDeadline.run("sleeping", within: .seconds(30), on: ContinuousClock()) {
                await withTaskGroup(of: (any Error)?.self) { group in
                    group.addTask {
                        await Self.error {
                            sent.open()
                            try await abandoning.run("SELECT pg_sleep(30)", logger: TestDatabase.logger)
                        }
                    }
                    await sent.wait()
                    group.cancelAll()
                    return await group.next() ?? nil
                }
            }
            #expect((failure as? RelayError)?.code == .storageFailure)
            // Its pool takes the connection back only now: closed, so it is lent to no other call.
            #expect(connection.isClosed)
            // A guard of another store, which knows nothing of the first, sends nothing on it and says so.
            let other = PostgresQueryGuard(connection, abandonsWhenCancelled: true)
            await #expect(throws: PostgresQueryGuard.Unsent.self) {
                try await other.run("SELECT 1", logger: TestDatabase.logger)
            }
            await #expect(throws: PostgresQueryGuard.Unsent.self) {
                try await abandoning.run("SELECT 1", logger: TestDatabase.logger)
            }
        }
    }

    /// What `body` throws, or nil.
    private static func error(_ body: () async throws -> Void) async -> (any Error)? {
        do {
            try await body()
            return nil
        } catch {
            return error
        }
    }
}
