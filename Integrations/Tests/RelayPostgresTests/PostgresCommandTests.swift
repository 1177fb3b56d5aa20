import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Testing

/// The `relay` command on a fleet's database, `relay-postgres`, run as a child process while a DataPoint runs on it.
@Suite(
    "S29 the relay command on a fleet's database", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresCommandTests {
    typealias Fleet = PostgresFleetTests

    /// The URL of `database` on the test's server, as `--store` takes it.
    static func url(of database: String) throws -> String {
        let configuration = try TestDatabase.connectionConfiguration(database: database)
        return "postgres://\(configuration.username)@\(configuration.host ?? "127.0.0.1"):"
            + "\(configuration.port ?? 5432)/\(database)"
    }

    /// Runs `relay-postgres` with `arguments` to its end.
    static func relay(_ arguments: [String]) async throws -> (status: Int32, lines: [String]) {
        let process = try ChildProcess(product: "relay-postgres", arguments: arguments)
        let lines = await process.readLines { _ in false }
        return (await process.exitStatus(), lines)
    }

    /// The JSON objects of `lines`.
    static func objects(_ lines: [String]) -> [[String: Any]] {
        lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test("S29: relay status, list, show and events read a fleet's database while it runs; cancel and replay change it")
    func readsAndChanges() async throws {
        try await TestDatabase.with { client, database in
            let store = try Self.url(of: database)
            let gate = Gate()
            let executors: [CallKind: any CallExecutor] = [
                Fleet.work: Fleet.runner("A"),
                CallKind(rawValue: "held"): ClosureExecutor { _, _ in
                    await gate.wait()
                    return .completed(Data("held".utf8))
                },
                CallKind(rawValue: "broken"): ClosureExecutor { _, _ in .failed(reason: "the receiver said no") },
            ]
            try await DataPoint.with(
                storage: PostgresFleetStorage(client: client, options: Fleet.options()), executors: executors
            ) { point in
                try await point.upsertCallSequence(CallSequence(name: Fleet.left, bunchSize: 4))
                let done = CallOperation(kind: Fleet.work, sequenceName: Fleet.left)
                let held = CallOperation(kind: CallKind(rawValue: "held"), sequenceName: Fleet.left)
                let broken = CallOperation(kind: CallKind(rawValue: "broken"), sequenceName: Fleet.left)
                // Waits for `held`, which runs until the gate opens.
                let waiting = CallOperation(kind: Fleet.work, sequenceName: Fleet.left, dependencies: [held.id])
                let handles = try await point.enqueue([done, held, broken, waiting])
                _ = try await handles[0].value
                await #expect(throws: (any Error).self) { try await handles[2].value }
                try await Self.waitUntilRunning(held.id, in: point)

                let status = try await Self.relay(["status", "--store", store])
                #expect(status.status == 0)
                #expect(status.lines.first?.contains("processes are running on it") == true, "\(status.lines)")
                #expect(
                    status.lines.contains("Operations: 4; 1 pending, 1 running, 1 completed, 1 failed"),
                    "\(status.lines)")
                let list = try await Self.relay(["list", "--store", store, "--json"])
                #expect(
                    Self.objects(list.lines).compactMap { $0["state"] as? String }
                        == ["completed", "running", "failed", "pending"])
                let show = try await Self.relay(["show", String(broken.id.uuidString.prefix(8)), "--store", store])
                #expect(show.status == 0)
                #expect(show.lines.contains("  state       failed"), "\(show.lines)")
                #expect(show.lines.contains { $0.contains("the receiver said no") }, "\(show.lines)")

                // The command changes the database as another process of the fleet would.
                let cancel = try await Self.relay(["cancel", waiting.id.uuidString, "--store", store])
                #expect(cancel.status == 0)
                #expect(try await handles[3].outcome == .cancelled(.requested))
                let replay = try await Self.relay(["replay", broken.id.uuidString, "--store", store])
                #expect(replay.status == 0)
                #expect(try await Fleet.count("SELECT count(*) FROM relay_operations", in: database) == 5)

                let follower = try ChildProcess(
                    product: "relay-postgres", arguments: ["events", "--follow", "--store", store])
                _ = await follower.readLines { $0.contains(#"{"event":"following"}"#) }
                gate.open()
                let followed = await follower.readLines { lines in
                    Self.objects(lines).contains {
                        $0["event"] as? String == "completed"
                            && $0["operation"] as? String == held.id.uuidString.lowercased()
                    }
                }
                await follower.kill()
                #expect(!followed.isEmpty)
                _ = try await handles[1].value
            }
            let history = try await Self.relay(["events", "--store", store])
            #expect(Self.objects(history.lines).filter { $0["event"] as? String == "completed" }.count == 2)
            let idle = try await Self.relay(["status", "--store", store, "--json"])
            #expect(Self.objects(idle.lines).first?["live"] as? Bool == false)
        }
    }

    @Test("S29: relay reads a database of many operations a page at a time, and every page agrees with the whole")
    func readsInPages() async throws {
        try await TestDatabase.with { client, database in
            let store = try Self.url(of: database)
            var quiet = Fleet.options()
            quiet.claims = false
            // No process claims: the operations wait, pending.
            let bulk = CallSequence.Name(rawValue: "bulk")
            let operations = (0..<1_201).map { _ in CallOperation(kind: Fleet.work, sequenceName: bulk) }
            try await DataPoint.with(storage: PostgresFleetStorage(client: client, options: quiet)) { point in
                try await point.upsertCallSequence(CallSequence(name: bulk, bunchSize: 4))
                _ = try await point.enqueue(operations)
            }
            let ids = operations.map { $0.id.uuidString.lowercased() }

            // Pages of 500 with their cursors, as the command reads them.
            var query = OperationQuery(sequence: bulk, limit: 500)
            var pages: [[UUID]] = []
            repeat {
                let page = try await PostgresFleetStorage.storedOperations(query, of: client)
                pages.append(page.operations.map(\.operation.id))
                #expect(page.running.isEmpty)
                query.after = page.next
            } while query.after != nil
            #expect(pages.map(\.count) == [500, 500, 201])
            #expect(pages.joined().map { $0.uuidString.lowercased() } == ids)

            let list = try await Self.relay(["list", "--store", store, "--sequence", "bulk", "--json"])
            #expect(list.status == 0)
            #expect(Self.objects(list.lines).compactMap { $0["id"] as? String } == ids)
            let status = try await Self.relay(["status", "--store", store, "--json"])
            let summary = Self.objects(status.lines).first
            #expect(summary?["operations"] as? Int == 1_201, "\(status.lines)")
            #expect((summary?["sequences"] as? [String: Any])?["bulk"] as? [String: Int] == ["pending": 1_201])
            let show = try await Self.relay(["show", String(ids[1_200].prefix(13)), "--store", store, "--json"])
            #expect(Self.objects(show.lines).first?["id"] as? String == ids[1_200], "\(show.lines)")
            let history = try await Self.relay(["events", "--store", store])
            #expect(Self.objects(history.lines).compactMap { $0["operation"] as? String } == ids)

            // A prefix finds exactly the ids that start with it, in commit order, whatever its length; one that no id
            // can start with (a hyphen out of place, uppercase, too long) finds nothing.
            for prefix in ["", "0"].map({ $0 + String(ids[600].prefix(1)) })
                + [9, 14, 36].map({ String(ids[7].prefix($0)) })
            {
                let found = try await PostgresFleetStorage.storedOperations(
                    withIDPrefix: prefix, of: client, limit: 2_000)
                #expect(
                    found.operations.map { $0.operation.id.uuidString.lowercased() }
                        == ids.filter { $0.hasPrefix(prefix) })
            }
            // Uppercase only changes a prefix that has a letter: one of digits alone reads the same in either case.
            let lettered = try #require(ids.first { $0.prefix(8).contains(where: \.isLetter) })
            let impossible = [
                "%", String(lettered.prefix(9)).uppercased(), String(ids[7].prefix(7)) + "-", ids[7] + "0",
            ]
            for prefix in impossible {
                let none = try await PostgresFleetStorage.storedOperations(withIDPrefix: prefix, of: client)
                #expect(none.operations.isEmpty, "\(prefix)")
            }
            let unknown = try await Self.relay(["show", "not-an-id", "--store", store])
            #expect(unknown.status == 2, "\(unknown.lines)")
        }
    }

    @Test("S27/S29: a process that claims nothing, as the relay command's, leaves every operation to the others")
    func processThatClaimsNothing() async throws {
        try await TestDatabase.with { client, database in
            var quiet = Fleet.options()
            quiet.claims = false
            try await DataPoint.with(
                storage: PostgresFleetStorage(client: client, options: quiet),
                executors: [Fleet.work: Fleet.runner("A")]
            ) { point in
                // In a default sequence, which every DataPoint registers; this process hears of it first.
                let handle = try await point.enqueue(CallOperation(kind: Fleet.work))
                let value = try await TestDatabase.withClient(database: database) { other in
                    try await DataPoint.with(
                        storage: PostgresFleetStorage(client: other, options: Fleet.options()),
                        executors: [Fleet.work: Fleet.runner("B")]
                    ) { _ in try await handle.value }
                }
                #expect(value == Data("B".utf8))
            }
        }
    }

    @Test("S26: relay on a database it cannot reach, or a URL with no host, exits 3 and changes nothing")
    func unreachable() async throws {
        let refused = try await Self.relay(["status", "--store", "postgres://relay@127.0.0.1:9/none"])
        #expect(refused.status == 3)
        let hostless = try await Self.relay(["list", "--store", "postgres:///db"])
        #expect(hostless.status == 3)
        let run = try await Self.relay(["run", "plan.json", "--store", "postgres://relay@127.0.0.1:9/none"])
        #expect(run.status == 2)
    }

    /// Returns once operation `id` runs in `point`, through the events of its DataPoint.
    static func waitUntilRunning(_ id: UUID, in point: DataPoint) async throws {
        let events = try point.events(for: id)
        if case .running? = try await point.status(of: id)?.state { return }
        for await event in events {
            if event.kind.name == "started" { return }
        }
    }
}
