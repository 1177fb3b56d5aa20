import Foundation
import Logging
import PostgresNIO
import Relay
import RelayTesting
import Testing

@testable import RelayPostgres

/// A fleet whose database ends every connection mid-run, as a restarted server or an administrator does, or refuses
/// new ones for a while.
@Suite(
    "S31 a fleet whose database fails", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetOutageTests {
    private typealias Fleet = PostgresFleetTests

    /// Ends every connection to `database` but the one that asks.
    private static func endConnections(to database: String) async throws -> Int {
        try await admin { admin in
            var ended = 0
            for try await _ in try await admin.query(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = \(database) AND pid <> pg_backend_pid()
                """
            ).decode(Bool.self) {
                ended += 1
            }
            return ended
        }
    }

    /// Lets `database` take new connections, or refuses them.
    private static func allowConnections(_ allowed: Bool, to database: String) async throws {
        try await admin { admin in
            _ = try await admin.query(
                PostgresQuery(unsafeSQL: "ALTER DATABASE \(database) WITH ALLOW_CONNECTIONS \(allowed)"))
        }
    }

    private static func admin<Result: Sendable>(
        _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        try await TestDatabase.withClient(database: "postgres", body)
    }

    /// Enqueues `operations`, again while the database is not back: the same ids change nothing the second time.
    static func enqueue(_ operations: [CallOperation], on point: DataPoint) async throws -> [CallHandle] {
        while true {
            do {
                return try await point.enqueue(operations)
            } catch let error as RelayError where error.code == .storageFailure {
                await Task.yield()
            }
        }
    }

    /// Twenty operations, half for each process.
    static func commit() -> [CallOperation] {
        (0..<20).map { index in
            CallOperation(kind: Fleet.work, sequenceName: index.isMultiple(of: 2) ? Fleet.left : Fleet.right)
        }
    }

    /// How many operations of `database` have not ended.
    static func unfinished(in database: String) async throws -> Int {
        try await TestDatabase.withClient(database: database) { client in
            var count = 0
            for try await number in try await client.query(
                "SELECT count(*) FROM relay_operations WHERE state < 3"
            ).decode(Int.self) {
                count = number
            }
            return count
        }
    }

    /// How many operations of `database` each process completed, by the name its executor answered with.
    static func ranBy(in database: String) async throws -> [String: Int] {
        try await TestDatabase.withClient(database: database) { client in
            var ranBy: [String: Int] = [:]
            for try await result in try await client.query(
                "SELECT result FROM relay_operations WHERE state >= 3"
            ).decode(ByteBuffer.self) {
                if case .completed(let data) = try CallResult(encoded: Data(result.readableBytesView)) {
                    ranBy[String(decoding: data, as: UTF8.self), default: 0] += 1
                }
            }
            return ranBy
        }
    }

    @Test(
        "S31: connections ended mid-run, five times, are made again: commits wait for them, LISTEN is heard again, nothing is lost"
    )
    func connectionsEnded() async throws {
        // No polling to make up for a notification missed: only LISTEN, made again, settles handles here.
        var options = Fleet.options()
        options.pollInterval = .seconds(3600)
        try await Fleet.withTwoProcesses(options: options) { point, database in
            var handles: [CallHandle] = []
            for _ in 0..<5 {
                handles += try await point.enqueue(Self.commit())
                #expect(try await Self.endConnections(to: database) > 0)
                // The pool still lends connections the server ended: the commit finds that out and takes another.
                handles += try await point.enqueue(Self.commit())
            }
            let ranBy = try await Fleet.ranBy(handles)
            #expect(ranBy == ["A": 100, "B": 100])
            #expect(try await Self.unfinished(in: database) == 0)
        }
    }

    @Test("S31: a claim that failed is made again once the database answers, with no other wake to come")
    func failedClaimMadeAgain() async throws {
        // Neither LISTEN nor the poll wakes the claims here: the resume is the one wake, and its claim fails.
        var options = Fleet.options()
        options.listens = false
        options.pollInterval = .seconds(3600)
        let claimFailed = Gate()
        let logger = Logger(label: "relay-outage-tests") { _ in
            GateLogHandler(opening: claimFailed, on: "claiming operations failed")
        }
        try await TestDatabase.with { [options] client, database in
            try await DataPoint.with(
                storage: PostgresFleetStorage(client: client, options: options, logger: logger),
                executors: [Fleet.work: Fleet.runner("A")]
            ) { point in
                try await Fleet.register(CallSequence(name: Fleet.left, bunchSize: 4), on: point)
                try await point.suspend()
                let handle = try await point.enqueue(CallOperation(kind: Fleet.work, sequenceName: Fleet.left))
                try await Self.renameClaim(in: database, from: "relay_claim", to: "relay_claim_hidden")
                try await point.resume()
                await claimFailed.wait()
                try await Self.renameClaim(in: database, from: "relay_claim_hidden", to: "relay_claim")
                #expect(try await handle.value == Data("A".utf8))
            }
        }
    }

    @Test("S31: an outcome committed by a batch that then failed settles its handle once the batch is given up")
    func outcomeOfAFailedBatchSettles() async throws {
        var options = Fleet.options()
        options.deadline = .seconds(1)
        let gate = Gate()
        let held = ClosureExecutor { _, _ in
            await gate.wait()
            return .completed(Data("ran".utf8))
        }
        try await TestDatabase.with { [options] client, database in
            let storage = PostgresFleetStorage(client: client, options: options)
            try await DataPoint.with(storage: storage, executors: [Fleet.work: held]) { point in
                try await Fleet.register(CallSequence(name: Fleet.left, bunchSize: 2), on: point)
                let (done, staging) = (
                    CallOperation(kind: Fleet.work, sequenceName: Fleet.left),
                    CallOperation(kind: Fleet.work, sequenceName: Fleet.left)
                )
                let handles = try await Self.enqueue([done, staging], on: point)
                await gate.waitForArrivals(2)
                // The batch a process writes when one attempt completes as another completes with staged changes.
                // Another session holds the lock that numbers commits of the document past the deadline: the plain
                // completion commits, the other waits and fails, and the batch is given up. The completion's
                // announcement came while this process held its claim.
                let memo = ModelChange(collection: "memos", id: "1", encoded: Data("staged".utf8))
                try await TestDatabase.withClient(database: database) { blocker in
                    try await blocker.withConnection { session in
                        _ = try await session.query("BEGIN", logger: TestDatabase.logger)
                        _ = try await session.query(
                            "SELECT snapshot FROM relay_counters FOR UPDATE", logger: TestDatabase.logger)
                        await storage.applyPersistently([
                            .finished(done.id, .completed(Data("recorded".utf8)), changes: [], ran: .zero),
                            .finished(staging.id, .completed(Data("staged".utf8)), changes: [memo], ran: .zero),
                        ])
                        _ = try await session.query("ROLLBACK", logger: TestDatabase.logger)
                    }
                }
                #expect(try await handles[0].value == Data("recorded".utf8))
                gate.open()
            }
        }
    }

    /// Renames the database's claim function, so that every claim fails until it is renamed back.
    private static func renameClaim(in database: String, from name: String, to newName: String) async throws {
        try await TestDatabase.withClient(database: database) { client in
            _ = try await client.query(PostgresQuery(unsafeSQL: "ALTER FUNCTION \(name) RENAME TO \(newName)"))
        }
    }

    @Test("S31: while the database refuses connections a commit fails typed at its deadline; then the work goes on")
    func connectionsRefused() async throws {
        var options = Fleet.options()
        options.deadline = .seconds(1)
        try await Fleet.withTwoProcesses(options: options) { point, database in
            // Tried again at a deadline so short: a loaded machine may take longer than that even now.
            var handles = try await Self.enqueue(Self.commit(), on: point)
            try await Self.allowConnections(false, to: database)
            do {
                #expect(try await Self.endConnections(to: database) > 0)
                // A commit may fail at once on a connection just ended; one that finds none waits for the deadline.
                var refused: RelayError?
                // The pool finds the connections ended one by one, sooner or later under load.
                for _ in 0..<200 where refused?.message.contains("did not answer within 1.0 seconds") != true {
                    refused = await #expect(throws: RelayError.self) {
                        try await point.enqueue(CallOperation(kind: Fleet.work, sequenceName: Fleet.left))
                    }
                    #expect(refused?.code == .storageFailure)
                }
                #expect(
                    refused?.message.contains("did not answer within 1.0 seconds") == true,
                    "\(String(describing: refused))")
            } catch {
                try await Self.allowConnections(true, to: database)
                throw error
            }
            try await Self.allowConnections(true, to: database)
            handles += try await Self.enqueue(Self.commit(), on: point)
            let ranBy = try await Fleet.ranBy(handles)
            #expect(ranBy == ["A": 20, "B": 20])
            #expect(try await Self.unfinished(in: database) == 0)
        }
    }

    @Test("S31: a DataPoint stops within its deadlines while the database refuses connections; its work runs again")
    func stopWhileRefused() async throws {
        var options = Fleet.options()
        // Short enough to bound the stop, long enough for a loaded machine's enqueue.
        options.deadline = .seconds(3)
        options.lease = .seconds(2)
        try await TestDatabase.with { [options] client, database in
            let gate = Gate()
            let held = ClosureExecutor { _, _ in
                await gate.wait()
                return .completed(Data("A".utf8))
            }
            let started = ContinuousClock.now
            var stopped = ContinuousClock.now
            let handles = try await Self.refusing(database) { refuse in
                // The DataPoint's close may throw the store's typed failure; it must return, and soon.
                var handles: [CallHandle] = []
                do {
                    try await DataPoint.with(
                        storage: PostgresFleetStorage(client: client, options: options), executors: [Fleet.work: held]
                    ) { point in
                        try await Fleet.register(CallSequence(name: Fleet.left, bunchSize: 4), on: point)
                        handles = try await Self.enqueue(
                            (0..<8).map { _ in CallOperation(kind: Fleet.work, sequenceName: Fleet.left) }, on: point)
                        await gate.waitForArrivals(4)
                        try await refuse()
                        gate.open()
                        stopped = .now
                    }
                } catch let error as RelayError {
                    #expect(error.code == .storageFailure)
                }
                return handles
            }
            let stopping = ContinuousClock.now - stopped
            // Each step of the stop is bounded by the deadline; a loaded machine adds its own slowness to each.
            #expect(stopping < .seconds(30), "stopping took \(stopping) after \(stopped - started)")
            for handle in handles {
                let outcome = await #expect(throws: RelayError.self) { try await handle.outcome }
                #expect(outcome?.code == .shutdown || outcome == nil)
            }
            // Once the database is back, another process runs everything: the claims held by the one that stopped
            // expire, and nothing it ran is taken for done unless recorded.
            let ranBy = try await TestDatabase.withClient(database: database) { other in
                try await DataPoint.with(
                    storage: PostgresFleetStorage(client: other, options: options),
                    executors: [Fleet.work: Fleet.runner("B")]
                ) { point in
                    try await Fleet.register(CallSequence(name: Fleet.left, bunchSize: 4), on: point)
                    // Runs once all eight have completed, wherever they ran.
                    let last = CallOperation(
                        kind: Fleet.work, sequenceName: Fleet.left, dependencies: Set(handles.map(\.id)))
                    #expect(try await point.execute(last) == Data("B".utf8))
                    return try await Self.ranBy(in: database)
                }
            }
            #expect(ranBy.values.reduce(0, +) == 9, "\(ranBy)")
        }
    }

    @Test("S31: a statement the database does not answer fails typed at its deadline; its connection is replaced")
    func statementUnanswered() async throws {
        var options = Fleet.options()
        options.deadline = .seconds(1)
        try await Fleet.withTwoProcesses(options: options) { point, database in
            let operation = CallOperation(kind: Fleet.work, sequenceName: Fleet.right)
            // Another session holds the lock every commit takes to number itself, so the commit's statement waits
            // in the database, sent on a live connection and unanswered, until that session lets go.
            let failure = try await TestDatabase.withClient(database: database) { blocker in
                try await blocker.withConnection { session in
                    _ = try await session.query("BEGIN", logger: TestDatabase.logger)
                    _ = try await session.query(
                        "SELECT snapshot FROM relay_counters FOR UPDATE", logger: TestDatabase.logger)
                    let failure = await #expect(throws: RelayError.self) { try await point.enqueue(operation) }
                    _ = try await session.query("ROLLBACK", logger: TestDatabase.logger)
                    return failure
                }
            }
            #expect(failure?.code == .storageFailure)
            #expect(
                failure?.message.contains("did not answer within 1.0 seconds") == true, "\(String(describing: failure))"
            )
            // The abandoned statement's transaction never commits; the same commit again runs the operation once.
            let handles = try await Self.enqueue([operation], on: point)
            #expect(try await Fleet.ranBy(handles) == ["B": 1])
            #expect(try await Fleet.count("SELECT count(*) FROM relay_operations", in: database) == 1)
        }
    }

    /// Runs `body`, which may make `database` refuse connections and end those it has; lets it take them again after.
    private static func refusing<Result: Sendable>(
        _ database: String, _ body: (@Sendable () async throws -> Void) async throws -> Result
    ) async throws -> Result {
        let refuse: @Sendable () async throws -> Void = {
            try await allowConnections(false, to: database)
            _ = try await endConnections(to: database)
        }
        do {
            let result = try await body(refuse)
            try await allowConnections(true, to: database)
            return result
        } catch {
            try await allowConnections(true, to: database)
            throw error
        }
    }
}
