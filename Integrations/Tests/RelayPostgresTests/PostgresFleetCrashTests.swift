import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Testing

/// A process of a fleet killed with SIGKILL while it holds claims: its leases expire and the operations run in
/// another process, their attempt counted, and the handles that await them settle.
@Suite(
    "S27 a fleet's process killed with SIGKILL", .serialized, .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetCrashTests {
    @Test("S27: operations claimed by a process killed with SIGKILL run elsewhere once their leases expire")
    func killedClaimer() async throws {
        try await TestDatabase.with { client, database in
            let configuration = try TestDatabase.connectionConfiguration(database: database)
            let worker = try ChildProcess(
                product: "RelayPostgresWorker",
                arguments: [
                    "claim", configuration.host ?? "127.0.0.1", String(configuration.port ?? 5432),
                    configuration.username, database, "2",
                ])
            #expect(await worker.readLines { $0.contains("ready") }.contains("ready"))
            var options = PostgresFleetStorage.Options()
            options.pollInterval = .milliseconds(100)
            let orders = CallSequence.Name(rawValue: "orders")
            try await DataPoint.with(
                storage: PostgresFleetStorage(client: client, options: options),
                executors: ["work": ClosureExecutor { _, context in .completed(Data("\(context.attempt)".utf8)) }]
            ) { point in
                let handles = try await point.enqueue(
                    (0..<50).map { _ in CallOperation(kind: "work", sequenceName: orders) })
                let started = await worker.readLines { lines in lines.count { $0.hasPrefix("started ") } >= 50 }
                #expect(Set(started.filter { $0.hasPrefix("started ") }).count == 50)
                await worker.kill()
                // Only now does this process run the sequence: what it runs, it reclaimed.
                try await point.upsertCallSequence(CallSequence(name: orders, bunchSize: 1000))
                for handle in handles { #expect(try await handle.value == Data("2".utf8)) }
            }
            var attempts: [Int] = []
            for try await count in try await client.query("SELECT attempts FROM relay_operations").decode(Int.self) {
                attempts.append(count)
            }
            #expect(attempts.count == 50 && attempts.allSatisfy { $0 == 2 }, "\(attempts)")
        }
    }
}
