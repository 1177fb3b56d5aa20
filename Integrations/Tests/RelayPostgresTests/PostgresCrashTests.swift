import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Testing

/// A process on PostgreSQL killed with SIGKILL: what it acknowledged is in the database, and the store is free again.
@Suite(
    "S26 crash recovery on PostgreSQL with SIGKILL", .serialized, .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresCrashTests {
    @Test("S26/S16: after SIGKILL, every operation the process acknowledged is in the store, and the store opens")
    func killedProcessLosesNothing() async throws {
        try await TestDatabase.with { client, database in
            let configuration = try TestDatabase.connectionConfiguration(database: database)
            let worker = try ChildProcess(
                product: "RelayPostgresWorker",
                arguments: [
                    "enqueue", configuration.host ?? "127.0.0.1", String(configuration.port ?? 5432),
                    configuration.username,
                    database,
                ])
            let lines = await worker.readLines { $0.count >= 300 }
            await worker.kill()
            let acknowledged = Set(
                lines.compactMap { line in line.hasPrefix("acked ") ? UUID(uuidString: String(line.dropFirst(6))) : nil
                })
            #expect(acknowledged.count >= 300)
            // The killed process's connection ends with it, and its lock with the connection: waiting for the lock,
            // then letting it go, waits exactly that long.
            try await client.withConnection { connection in
                try await connection.query(
                    "SELECT pg_advisory_lock(\(PostgresStorage.ownerKey))", logger: TestDatabase.logger)
                try await connection.query(
                    "SELECT pg_advisory_unlock(\(PostgresStorage.ownerKey))", logger: TestDatabase.logger)
            }
            let storage = PostgresStorage(configuration: configuration)
            let state = try await storage.open()
            try await storage.close()
            let lost = acknowledged.subtracting(state.operations.map(\.operation.id))
            #expect(lost.isEmpty, "\(lost.count) of \(acknowledged.count) acknowledged operations were lost")
        }
    }
}
