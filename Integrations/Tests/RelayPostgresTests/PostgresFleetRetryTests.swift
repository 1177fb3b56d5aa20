import Foundation
import Logging
import Relay
import RelayPostgres
import RelayTesting
import Testing

/// A retry's delay on a fleet: the operation goes back to the database, and its sequence's slot with it.
@Suite(
    "S28 retries across a fleet", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetRetryTests {
    private typealias Fleet = PostgresFleetTests

    /// Runs `body` with a DataPoint on a new database whose executor of `work` is `executor`, and whose sequence
    /// `right` has one slot.
    private static func withOneSlot(
        running executor: ClosureExecutor, _ body: @Sendable (DataPoint) async throws -> Void
    ) async throws {
        try await TestDatabase.with { client, _ in
            try await DataPoint.with(
                storage: PostgresFleetStorage(client: client, options: Fleet.options()),
                executors: [Fleet.work: executor]
            ) { point in
                try await Fleet.register(CallSequence(name: Fleet.right, bunchSize: 1), on: point)
                try await body(point)
            }
        }
    }

    @Test("S28: while a retry waits, its sequence's slot is free fleet-wide, and the retry runs once its time comes")
    func retryGivesSlotBack() async throws {
        let retrying = CallOperation(kind: Fleet.work, sequenceName: Fleet.right)
        let next = CallOperation(kind: Fleet.work, sequenceName: Fleet.right)
        let executor = ClosureExecutor { operation, context in
            if operation.id == retrying.id && context.attempt == 1 {
                return .retry(after: .seconds(15), reason: "busy")
            }
            return .completed(Data("\(context.attempt)".utf8))
        }
        try await Self.withOneSlot(running: executor) { point in
            let handles = try await point.enqueue([retrying, next])
            // A bunch size of 1, and the next operation ran while the first one's retry waited.
            #expect(try await handles[1].value == Data("1".utf8))
            guard case .pending(let waiting)? = try await point.status(of: retrying.id)?.state else {
                Issue.record("the retrying operation is not waiting in the database")
                return
            }
            #expect(waiting.until != nil, "it waits for its retry's time, kept in the database")
            #expect(try await handles[0].value == Data("2".utf8), "its second attempt, claimed again")
            let status = try #require(try await point.status(of: retrying.id))
            #expect(status.attempts == 2)
        }
    }

    @Test("S10/S28: a hold set on an operation that runs here follows it to the fleet when it goes back for a retry")
    func holdFollowsRetry() async throws {
        let held = CallOperation(kind: Fleet.work, sequenceName: Fleet.right)
        let next = CallOperation(kind: Fleet.work, sequenceName: Fleet.right)
        let (started, proceed) = (Gate(), Gate())
        let executor = ClosureExecutor { operation, context in
            if operation.id == held.id && context.attempt == 1 {
                started.open()
                await proceed.wait()
                return .retry(after: .zero, reason: "busy")
            }
            return .completed(Data("\(context.attempt)".utf8))
        }
        try await Self.withOneSlot(running: executor) { point in
            // First in start order, with the sequence's one slot.
            let handles = try await point.enqueue([held, next])
            await started.wait()
            try await point.hold(held.id, until: Date(timeIntervalSinceNow: 3600), context: "pause")
            proceed.open()
            // The next operation runs once the retry has gone back to the database, held there.
            #expect(try await handles[1].value == Data("1".utf8))
            guard case .pending(let waiting)? = try await point.status(of: held.id)?.state else {
                Issue.record("the held operation is not waiting in the database")
                return
            }
            #expect((waiting.until ?? .distantPast) > Date(timeIntervalSinceNow: 1800), "\(waiting)")
            try await point.hold(held.id, until: nil, context: "pause")
            #expect(try await handles[0].value == Data("2".utf8), "its second attempt, once released")
        }
    }

    @Test("S28/S31: a retry the database could not take back in time is let go, and runs again once its lease expires")
    func retryGivenUpRunsAgain() async throws {
        var options = Fleet.options()
        options.deadline = .seconds(1)
        // Long enough that a loaded machine renews it while the attempt waits for the blocker; it expires after.
        options.lease = .seconds(5)
        let gaveUp = Gate()
        let logger = Logger(label: "relay-retry-tests") { _ in
            GateLogHandler(opening: gaveUp, on: "gave up recording what ran here")
        }
        let (started, proceed) = (Gate(), Gate())
        let executor = ClosureExecutor { _, context in
            guard context.attempt > 1 else {
                started.open()
                await proceed.wait()
                return .retry(after: .zero, reason: "busy")
            }
            return .completed(Data("\(context.attempt)".utf8))
        }
        try await TestDatabase.with { [options] client, database in
            try await DataPoint.with(
                storage: PostgresFleetStorage(client: client, options: options, logger: logger),
                executors: [Fleet.work: executor]
            ) { point in
                try await Fleet.register(CallSequence(name: Fleet.right, bunchSize: 1), on: point)
                // Tried again at a deadline so short: a loaded machine may take longer than that even now.
                let handle = try await PostgresFleetOutageTests.enqueue(
                    [CallOperation(kind: Fleet.work, sequenceName: Fleet.right)], on: point)[0]
                await started.wait()
                // Another session holds the sequence's row, which giving the retry back takes first, past the
                // deadline: the process gives the write up.
                try await TestDatabase.withClient(database: database) { blocker in
                    try await blocker.withConnection { session in
                        _ = try await session.query("BEGIN", logger: TestDatabase.logger)
                        _ = try await session.query(
                            "SELECT 1 FROM relay_sequences FOR UPDATE", logger: TestDatabase.logger)
                        proceed.open()
                        await gaveUp.wait()
                        _ = try await session.query("ROLLBACK", logger: TestDatabase.logger)
                    }
                }
                // Claimed still, under a lease no one renews: it expires, and the operation runs again.
                #expect(try await handle.value == Data("2".utf8))
            }
        }
    }
}
