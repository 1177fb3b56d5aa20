import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Testing

/// DataPoints of two processes on one database, each with a client of its own: one queue, fleet-wide.
@Suite(
    "S26 S29 DataPoints on a fleet", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetTests {
    static let work = CallKind(rawValue: "work")
    static let left = CallSequence.Name(rawValue: "left")
    static let right = CallSequence.Name(rawValue: "right")

    /// An executor that answers with the name of the process that ran it.
    static func runner(_ process: String) -> ClosureExecutor {
        ClosureExecutor { _, _ in .completed(Data(process.utf8)) }
    }

    static func options() -> PostgresFleetStorage.Options {
        var options = PostgresFleetStorage.Options()
        options.lease = .seconds(5)
        options.pollInterval = .milliseconds(200)
        return options
    }

    /// Registers `sequence`, again while the database misses the deadline: a loaded machine may miss a short one.
    static func register(_ sequence: CallSequence, on point: DataPoint) async throws {
        while true {
            do {
                try await point.upsertCallSequence(sequence)
                return
            } catch let error as RelayError where error.code == .storageFailure {
                await Task.yield()
            }
        }
    }

    /// How many of `handles` each process ran, by the name its executor answers with.
    static func ranBy(_ handles: [CallHandle]) async throws -> [String: Int] {
        var ranBy: [String: Int] = [:]
        for handle in handles { ranBy[String(decoding: try await handle.value, as: UTF8.self), default: 0] += 1 }
        return ranBy
    }

    /// Runs `body` in process A while process B, on a client of its own, runs sequence `right` with `other` until
    /// `body` returns; both stores with `options`.
    static func withTwoProcesses<Result: Sendable>(
        options: PostgresFleetStorage.Options = options(),
        other executor: any CallExecutor = runner("B"),
        _ body: @Sendable (DataPoint, String) async throws -> Result
    ) async throws -> Result {
        try await TestDatabase.with { client, database in
            try await TestDatabase.withClient(database: database) { other in
                let started = Gate()
                let finished = Gate()
                return try await withThrowingTaskGroup(of: Result?.self) { group in
                    group.addTask {
                        try await DataPoint.with(
                            storage: PostgresFleetStorage(client: other, options: options),
                            executors: [work: executor]
                        ) { point in
                            try await register(CallSequence(name: right, bunchSize: 4), on: point)
                            started.open()
                            await finished.wait()
                        }
                        return nil
                    }
                    await started.wait()
                    let result = try await DataPoint.with(
                        storage: PostgresFleetStorage(client: client, options: options),
                        executors: [work: runner("A")]
                    ) { point in
                        try await register(CallSequence(name: left, bunchSize: 4), on: point)
                        return try await body(point, database)
                    }
                    finished.open()
                    try await group.waitForAll()
                    return result
                }
            }
        }
    }

    @Test("S29: a handle settles in the process that enqueued when another process ran the operation")
    func handleAcrossProcesses() async throws {
        try await Self.withTwoProcesses { point, _ in
            let there = CallOperation(kind: Self.work, sequenceName: Self.right)
            let here = CallOperation(kind: Self.work, sequenceName: Self.left, dependencies: [there.id])
            let handles = try await point.enqueue([there, here])
            #expect(try await handles[0].value == Data("B".utf8))
            #expect(try await handles[1].value == Data("A".utf8))
        }
    }

    @Test("S29: a handle awaiting work left to other processes ends with a shutdown error when its DataPoint stops")
    func handleAtShutdown() async throws {
        try await TestDatabase.with { client, _ in
            // Registered in the database by a process that has gone: nothing runs it now.
            try await DataPoint.with(storage: PostgresFleetStorage(client: client, options: Self.options())) { gone in
                _ = try await gone.upsertCallSequence(CallSequence(name: Self.right, bunchSize: 1))
            }
            let handle = try await DataPoint.with(
                storage: PostgresFleetStorage(client: client, options: Self.options()),
                executors: [Self.work: Self.runner("A")]
            ) { point in
                try await point.enqueue(CallOperation(kind: Self.work, sequenceName: Self.right))
            }
            let error = await #expect(throws: RelayError.self) { try await handle.outcome }
            #expect(error?.code == .shutdown)
        }
    }

    @Test("S29: an operation another process enqueued is found by id: its status, and a handle that settles")
    func operationElsewhereFound() async throws {
        let gate = Gate()
        let held = ClosureExecutor { _, _ in
            await gate.wait()
            return .completed(Data("B".utf8))
        }
        try await Self.withTwoProcesses(other: held) { point, database in
            // Enqueued by a third process, which stops before the handles are asked for.
            let (first, second) = try await TestDatabase.withClient(database: database) { client in
                try await DataPoint.with(storage: PostgresFleetStorage(client: client, options: Self.options())) {
                    third in
                    let first = CallOperation(kind: Self.work, sequenceName: Self.right)
                    let second = CallOperation(kind: Self.work, sequenceName: Self.right, dependencies: [first.id])
                    _ = try await third.enqueue([first, second])
                    return (first, second)
                }
            }
            await gate.waitForArrivals(1)
            #expect(try await point.status(of: first.id)?.state == .running(attempt: 1))
            #expect(try await point.status(of: second.id)?.state == .pending(.dependencies(1)))
            #expect(try await point.status(of: UUID()) == nil)
            let running = try await point.handle(for: first.id)
            let waiting = try await point.handle(for: second.id)
            #expect(running.id == first.id && waiting.id == second.id)
            gate.open()
            #expect(try await running.value == Data("B".utf8))
            #expect(try await waiting.value == Data("B".utf8))
            // Settled once the outcome is committed, so the database has it now.
            let status = try #require(try await point.status(of: second.id))
            #expect(status.state == .finished(.completed(Data("B".utf8))))
            #expect(status.attempts == 1 && status.sequenceName == Self.right && status.metrics.startedAt != nil)
            let ended = try await point.handle(for: first.id)
            #expect(try await ended.outcome == .completed(Data("B".utf8)), "an ended one's handle settles at once")
            let unknown = await #expect(throws: RelayError.self) { try await point.handle(for: UUID()) }
            #expect(unknown?.code == .unknownOperation)
        }
    }

    /// A model of the document.
    @Test("S28: a start time given at enqueue holds the operation in every process until then")
    func scheduledStart() async throws {
        try await Self.withTwoProcesses { point, database in
            let start = Date().addingTimeInterval(1)
            let later = CallOperation(kind: Self.work, sequenceName: Self.right)
            let handle = try await point.enqueue(later, at: start)
            #expect(try await point.execute(CallOperation(kind: Self.work, sequenceName: Self.right)) == Data("B".utf8))
            #expect(try await handle.value == Data("B".utf8))
            // Started by the database's clock no earlier than its time, which the database kept.
            let early = try await Self.count(
                """
                SELECT count(*) FROM relay_operations
                WHERE id = '\(later.id.uuidString)' AND (available_at IS NULL OR started_at < available_at)
                """, in: database)
            #expect(early == 0)
        }
    }

    @Test("S28: a hold set in one process keeps an operation waiting in the database from every process until then")
    func holdsShared() async throws {
        try await Self.withTwoProcesses { point, database in
            try await point.suspend()
            let held = CallOperation(kind: Self.work, sequenceName: Self.right)
            let released = CallOperation(kind: Self.work, sequenceName: Self.right)
            let handles = try await point.enqueue([held, released])
            // Both from one instant: the second ends first however long the first call takes.
            let until = Date().addingTimeInterval(1)
            try await point.hold(held.id, until: until, context: "rate")
            try await point.hold(held.id, until: until.addingTimeInterval(-0.5), context: "other")
            let (heldUntil, holds) = try await TestDatabase.withClient(database: database) { client in
                var found: (Double?, String) = (nil, "")
                for try await row in try await client.query(
                    "SELECT extract(epoch FROM held_until)::float8, holds::text FROM relay_operations WHERE id = \(held.id)"
                ).decode((Double?, String).self) {
                    found = row
                }
                return found
            }
            #expect(
                heldUntil.map { abs($0 - until.timeIntervalSince1970) < 0.001 } == true,
                "the latest of its holds, \(until.timeIntervalSince1970); held until \(String(describing: heldUntil)), \(holds)"
            )
            let hour = Date().addingTimeInterval(3600)
            try await point.hold(released.id, until: hour, context: "rate")
            guard case .pending(let waiting)? = try await point.status(of: released.id)?.state, let end = waiting.until
            else {
                Issue.record("the held operation is not shown held")
                return
            }
            #expect(abs(end.timeIntervalSince(hour)) < 0.001)
            try await point.hold(released.id, until: nil, context: "rate")
            #expect(try await point.status(of: released.id)?.state == .pending(.suspended))
            try await point.resume()
            #expect(try await handles[1].value == Data("B".utf8))
            #expect(try await handles[0].value == Data("B".utf8))
            // Started by the database's clock no earlier than its hold, which the database kept.
            let early = try await Self.count(
                """
                SELECT count(*) FROM relay_operations
                WHERE id = '\(held.id.uuidString)' AND (held_until IS NULL OR started_at < held_until)
                """, in: database)
            #expect(early == 0)
            let unknown = await #expect(throws: RelayError.self) { try await point.hold(UUID(), until: nil) }
            #expect(unknown?.code == .unknownOperation)
            let finished = await #expect(throws: RelayError.self) { try await point.hold(held.id, until: until) }
            #expect(finished?.code == .operationFinished)
        }
    }

    @Test("S14 S26: the fleet's counts are the database's, whichever process enqueued and ran what")
    func countsOfTheFleet() async throws {
        try await TestDatabase.with { client, database in
            // A database that Relay has not set up counts nothing, and is left as it was.
            let counts = try await PostgresFleetStorage.operationCounts(of: client)
            let tables = try await Self.count(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", in: database)
            #expect(counts.isEmpty && tables == 0)
        }
        try await Self.withTwoProcesses { point, database in
            let ran = (0..<3).map { _ in CallOperation(kind: Self.work, sequenceName: Self.right) }
            for handle in try await point.enqueue(ran) { #expect(try await handle.value == Data("B".utf8)) }
            try await point.suspend()
            _ = try await point.enqueue((0..<2).map { _ in CallOperation(kind: Self.work, sequenceName: Self.left) })
            try await TestDatabase.withClient(database: database) { client in
                #expect(try await PostgresFleetStorage.operationCounts(of: client) == [.completed: 3, .pending: 2])
                let left = try await PostgresFleetStorage.operationCounts(of: client, sequence: Self.left)
                #expect(left == [.pending: 2])
                let counts = try await PostgresFleetStorage.operationCounts(of: client, sequence: "webhooks")
                #expect(counts.isEmpty)
            }
        }
    }

    @Test("S14 S26: the fleet's metrics are the database's: counts per sequence, percentiles of what finished last")
    func metricsOfTheFleet() async throws {
        try await TestDatabase.with { client, _ in
            let empty = try await PostgresFleetStorage.metrics(of: client)
            #expect(empty.sequences.isEmpty && empty.runTime.samples == 0 && empty.queueWait.samples == 0)
            let refused = await #expect(throws: RelayError.self) {
                try await PostgresFleetStorage.metrics(of: client, window: -1)
            }
            #expect(refused?.code == .invalidArgument)
        }
        // Each attempt in the other process takes 30 ms, which it reports with its outcome.
        let slow = ClosureExecutor { _, _ in
            try await Task.sleep(for: .milliseconds(30))
            return .completed(Data("B".utf8))
        }
        try await Self.withTwoProcesses(other: slow) { point, database in
            let ran = (0..<3).map { _ in CallOperation(kind: Self.work, sequenceName: Self.right) }
            for handle in try await point.enqueue(ran) { #expect(try await handle.value == Data("B".utf8)) }
            try await point.suspend()
            _ = try await point.enqueue((0..<2).map { _ in CallOperation(kind: Self.work, sequenceName: Self.left) })
            try await TestDatabase.withClient(database: database) { client in
                let fleet = try await PostgresFleetStorage.metrics(of: client)
                let failed = fleet.sequences["webhooks"]?.failed ?? 0
                #expect(failed == 0 && fleet.sequences["webhooks"] == nil)
                #expect(fleet.sequences[Self.right]?.completed == 3)
                #expect(fleet.sequences[Self.left]?.pending == 2)
                #expect(fleet.running == 0 && fleet.droppedEvents == 0)
                #expect(fleet.runTime.samples == 3 && fleet.queueWait.samples == 3)
                #expect(fleet.runTime.p50 >= .milliseconds(30) && fleet.runTime.p99 >= fleet.runTime.p50)
                let last = try await PostgresFleetStorage.metrics(of: client, window: 1)
                #expect(last.runTime.samples == 1 && last.sequences == fleet.sequences)
                let counts = try await PostgresFleetStorage.metrics(of: client, window: 0)
                #expect(counts.runTime.samples == 0 && counts.queueWait.samples == 0)
                #expect(counts.sequences == fleet.sequences && counts.running == fleet.running)
            }
        }
    }

    /// The number a query that counts answers in `database`.
    static func count(_ sql: String, in database: String) async throws -> Int {
        try await TestDatabase.withClient(database: database) { client in
            var count = -1
            for try await number in try await client.query(PostgresQuery(unsafeSQL: sql)).decode(Int.self) {
                count = number
            }
            return count
        }
    }

    @Test("S29: without LISTEN, behind a connection pooler, polling alone finds work and settles handles")
    func pollingAlone() async throws {
        var options = Self.options()
        options.listens = false
        options.pollInterval = .milliseconds(50)
        try await Self.withTwoProcesses(options: options) { point, _ in
            let there = CallOperation(kind: Self.work, sequenceName: Self.right)
            let here = CallOperation(kind: Self.work, sequenceName: Self.left, dependencies: [there.id])
            let handles = try await point.enqueue([there, here])
            #expect(try await handles[0].value == Data("B".utf8))
            #expect(try await handles[1].value == Data("A".utf8))
        }
    }

    @Test("S29: without LISTEN, work a process enqueues starts there at once, not at the next poll")
    func pollingAloneRunsOwnWork() async throws {
        var options = Self.options()
        options.listens = false
        options.pollInterval = .seconds(3600)
        try await TestDatabase.with { [options] client, _ in
            try await DataPoint.with(
                storage: PostgresFleetStorage(client: client, options: options),
                executors: [Self.work: Self.runner("A")]
            ) { point in
                try await point.upsertCallSequence(CallSequence(name: Self.left, bunchSize: 4))
                let operation = CallOperation(kind: Self.work, sequenceName: Self.left)
                #expect(try await point.execute(operation) == Data("A".utf8))
            }
        }
    }

    @Test("S26 S29: commits from a process number fleet-wide, and many operations each end once, in either process")
    func manyOperations() async throws {
        try await Self.withTwoProcesses { point, _ in
            var handles: [CallHandle] = []
            for round in 0..<20 {
                let commit = (0..<10).map { index in
                    CallOperation(
                        kind: Self.work, sequenceName: (round + index).isMultiple(of: 2) ? Self.left : Self.right)
                }
                handles += try await point.enqueue(commit)
            }
            let ranBy = try await Self.ranBy(handles)
            #expect(ranBy == ["A": 100, "B": 100])
        }
    }

    @Test("S17: bad commits to the fleet are typed errors and enqueue nothing")
    func badCommits() async throws {
        try await Self.withTwoProcesses { point, _ in
            let nowhere = CallOperation(kind: Self.work, sequenceName: CallSequence.Name(rawValue: "nowhere"))
            let unknown = await #expect(throws: RelayError.self) { try await point.enqueue(nowhere) }
            #expect(unknown?.code == .unknownSequence)
            let missing = CallOperation(kind: Self.work, sequenceName: Self.left, dependencies: [UUID()])
            let dependency = await #expect(throws: RelayError.self) { try await point.enqueue(missing) }
            #expect(dependency?.code == .unknownDependency)
            var first = CallOperation(kind: Self.work, sequenceName: Self.left)
            let second = CallOperation(kind: Self.work, sequenceName: Self.left, dependencies: [first.id])
            first.dependencies = [second.id]
            let cycle = await #expect(throws: RelayError.self) { try await point.enqueue([first, second]) }
            #expect(cycle?.code == .dependencyCycle)
            let fine = CallOperation(kind: Self.work, sequenceName: Self.left)
            let value = try await point.execute(fine)
            #expect(value == Data("A".utf8))
        }
    }
}
