import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Testing

/// Three processes of a fleet on one database run 10,000 HTTP calls over four sequences, one of them killed with
/// SIGKILL halfway, against a receiver on loopback that counts the requests each sequence has in flight.
@Suite(
    "S28 S29 three processes, four sequences, one killed", .serialized, .timeLimit(.minutes(4)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetLoadTests {
    @Test("S27 S28 S29: every operation ends once, no bunch size is exceeded fleet-wide, and start order holds")
    func threeProcesses() async throws {
        let receiver = try LoopbackServer()
        defer { receiver.stop() }
        // A scripted slow peer, so that calls of a sequence overlap as much as its bunch size lets them.
        for number in 1...4 { receiver.setDefault("/s\(number)", .status(200).delayed(by: .milliseconds(2))) }
        try await TestDatabase.with { client, database in
            let configuration = try TestDatabase.connectionConfiguration(database: database)
            let workers = try (0..<3).map { _ in
                try ChildProcess(
                    product: "RelayPostgresWorker",
                    arguments: [
                        "run", configuration.host ?? "127.0.0.1", String(configuration.port ?? 5432),
                        configuration.username, database, "2",
                    ])
            }
            for worker in workers { #expect(await worker.readLines { $0.contains("ready") }.contains("ready")) }
            var options = PostgresFleetStorage.Options()
            options.pollInterval = .milliseconds(100)
            // This process enqueues and awaits; it registers none of the four sequences, so it runs none of them.
            let operations = try await DataPoint.with(storage: PostgresFleetStorage(client: client, options: options)) {
                point in
                var operations: [CallOperation] = []
                var handles: [CallHandle] = []
                for _ in 0..<100 {
                    var commit: [CallOperation] = []
                    for index in 0..<100 {
                        let number = index % 4 + 1
                        // Every tenth depends on the one before it, of another sequence, likely in another process.
                        let operation = try CallOperation.http(
                            HTTPCall(method: .post, url: receiver.url("/s\(number)")),
                            sequenceName: CallSequence.Name(rawValue: "s\(number)"),
                            dependencies: index % 10 == 9 ? [commit[index - 1].id] : [])
                        commit.append(operation)
                    }
                    operations += commit
                    handles += try await point.enqueue(commit)
                }
                await receiver.waitForRequests(3000)
                await workers[0].kill()
                for handle in handles { _ = try await handle.value }
                return operations
            }
            for worker in workers.dropFirst() { await worker.kill() }
            for number in 1...4 {
                #expect(receiver.mostInFlight("/s\(number)") <= number + 1, "sequence s\(number)")
                #expect(receiver.mostInFlight("/s\(number)") > 1, "sequence s\(number) never overlapped")
            }
            let keys = Set(receiver.idempotencyKeys)
            #expect(keys == Set(operations.map(\.idempotencyKey)))
            try await Self.checkRows(operations, client: client)
        }
    }

    /// Every operation ended once, completed; each sequence's first attempts started in start order, within a bunch.
    private static func checkRows(_ operations: [CallOperation], client: PostgresClient) async throws {
        var started: [String: [UUID]] = [:]
        var states: [Int16: Int] = [:]
        var reclaimed: Set<UUID> = []
        for try await (id, sequence, state, attempts) in try await client.query(
            "SELECT id, sequence, state, attempts FROM relay_operations ORDER BY started_at"
        ).decode((UUID, String, Int16, Int).self) {
            states[state, default: 0] += 1
            if attempts > 1 { reclaimed.insert(id) }
            started[sequence, default: []].append(id)
        }
        #expect(states == [3: operations.count])
        let dependents = Set(operations.filter { !$0.dependencies.isEmpty }.map(\.id))
        for number in 1...4 {
            let name = "s\(number)"
            let skipped = dependents.union(reclaimed)
            let order = operations.filter { $0.sequenceName.rawValue == name && !skipped.contains($0.id) }.map(\.id)
            let claimed = (started[name] ?? []).filter { !skipped.contains($0) }
            #expect(claimed.count == order.count)
            let places = Dictionary(uniqueKeysWithValues: claimed.enumerated().map { ($1, $0) })
            let worst = order.enumerated().map { abs((places[$1] ?? .max) - $0) }.max() ?? 0
            #expect(worst <= number + 1, "sequence \(name) started an operation \(worst) places from its turn")
        }
    }
}
