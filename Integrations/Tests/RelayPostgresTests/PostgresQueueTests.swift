import Foundation
import Logging
import PostgresNIO
import Relay
import Synchronization
import Testing

@testable import RelayPostgres

/// The fleet's queue on a real server: claims in start order under leases, outcomes fenced by owner and attempt,
/// bunch sizes and algorithms held by the database for every process at once.
@Suite(
    "S27 S28 the fleet's queue", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresQueueTests {
    static let orders = CallSequence.Name(rawValue: "orders")

    /// Runs `body` with a queue on a new, migrated database.
    static func withQueue<Result: Sendable>(
        _ body: @Sendable (PostgresQueue, String) async throws -> Result
    ) async throws -> Result {
        try await TestDatabase.with { client, database in
            try await PostgresSchema.migrate(client)
            return try await body(PostgresQueue(client: client, logger: TestDatabase.logger), database)
        }
    }

    /// Runs `body` with a queue of a client of its own on `database`, as another process of the fleet has.
    static func withOtherProcess<Result: Sendable>(
        on database: String, _ body: @Sendable (PostgresQueue) async throws -> Result
    ) async throws -> Result {
        try await TestDatabase.withClient(database: database) { client in
            try await body(PostgresQueue(client: client, logger: TestDatabase.logger))
        }
    }

    static func operation(
        _ sequence: CallSequence.Name = orders, priority: Int = 0, after dependencies: Set<UUID> = [],
        runAnyway: Bool = false
    ) -> CallOperation {
        CallOperation(
            kind: CallKind(rawValue: "webhook"), sequenceName: sequence, dependencies: dependencies,
            priority: priority, onDependencyFailure: runAnyway ? .runAnyway : .cancel)
    }

    @Test("S27: a claim takes ready operations in start order, each for its first attempt under the claimer's lease")
    func claimInStartOrder() async throws {
        try await Self.withQueue { queue, _ in
            try await queue.configure(Self.orders, bunchSize: 10, algorithm: .flat)
            let first = [Self.operation(), Self.operation(priority: 5), Self.operation()]
            let second = [Self.operation(), Self.operation(priority: 5)]
            let one = try await queue.enqueue(first)
            let two = try await queue.enqueue(second)
            #expect(two.snapshot == one.snapshot + 1)
            #expect(one.added == first.map(\.id))
            let owner = UUID()
            let claims = try await queue.claim(.init(owner: owner, limit: 10, lease: .seconds(30)))
            #expect(claims.map(\.operation.id) == [first[1], second[1], first[0], first[2], second[0]].map(\.id))
            #expect(claims.allSatisfy { $0.attempt == 1 })
            #expect(claims.map(\.snapshot) == [one, two, one, one, two].map(\.snapshot))
            let stored = try #require(try await queue.stored(first[0].id))
            #expect(stored.state == .running && stored.owner == owner && stored.attempts == 1)
            #expect(try await queue.claim(.init(owner: UUID(), limit: 10, lease: .seconds(30))).isEmpty)
        }
    }

    @Test("S27 S28: outcomes and the claim of the slots they free commit in one transaction, in start order")
    func finishThenClaim() async throws {
        try await Self.withQueue { queue, _ in
            try await queue.configure(Self.orders, bunchSize: 2, algorithm: .flat)
            let operations = (0..<5).map { _ in Self.operation() }
            _ = try await queue.enqueue(operations)
            let owner = UUID()
            let first = try await queue.claim(.init(owner: owner, limit: 10, lease: .seconds(30)))
            #expect(first.map(\.operation.id) == operations.prefix(2).map(\.id))
            let outcomes = first.map { claim in
                PostgresQueue.Outcome(
                    id: claim.operation.id, owner: owner, attempt: claim.attempt, result: .completed(Data()))
            }
            let request = PostgresQueue.ClaimRequest(
                owner: owner, sequences: [Self.orders], limit: 10, lease: .seconds(30))
            let (recorded, claims) = try await queue.finish(outcomes, thenClaiming: request)
            #expect(recorded == Set(first.map(\.operation.id)))
            // The bunch size of 2 holds: the claim sees the two slots the outcomes freed, and no more.
            #expect(claims.map(\.operation.id) == operations[2..<4].map(\.id))
            // An outcome whose lease was lost records nothing, frees nothing, and the claim finds no free slot.
            let stale = PostgresQueue.Outcome(
                id: operations[4].id, owner: UUID(), attempt: 1, result: .completed(Data()))
            let (none, more) = try await queue.finish([stale], thenClaiming: request)
            #expect(none.isEmpty && more.isEmpty)
        }
    }

    @Test("S26: an enqueue, a claim and outcomes are answered once their commit is durable: their procedures commit")
    func answeredOnceCommitted() async throws {
        try await Self.withQueue { queue, database in
            try await queue.configure(Self.orders, bunchSize: 10, algorithm: .flat)
            let operation = Self.operation()
            #expect(try await queue.enqueue([operation]).added == [operation.id])
            let enqueued = try await Self.withOtherProcess(on: database) { try await $0.stored(operation.id) }
            #expect(enqueued?.state == .pending)
            // A procedure that commits is refused inside a transaction block: each of the three runs its own COMMIT
            // before it answers, where a function alone is answered before the implicit transaction commits.
            for call: PostgresQuery in [
                """
                CALL relay_enqueue_committing(
                    NULL, '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', NULL, NULL)
                """,
                "CALL relay_claim_committing(\(UUID()), NULL, 10, 30, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
                """
                CALL relay_complete_committing(
                    '{}', '{}', '{}', '{}', '{}', '{}', NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
                """,
            ] {
                let refused = await #expect(throws: PostgresTransactionError.self) {
                    try await TestDatabase.withClient(database: database) { client in
                        try await client.withTransaction(logger: TestDatabase.logger) { connection in
                            _ = try await connection.query(call, logger: TestDatabase.logger).collect()
                        }
                    }
                }
                let error = refused?.closureError as? PSQLError
                #expect(error?.serverInfo?[.sqlState] == "2D000", "invalid transaction termination")
            }
            let owner = UUID()
            #expect(try await queue.claim(.init(owner: owner, limit: 10, lease: .seconds(30))).count == 1)
            let seen = try await Self.withOtherProcess(on: database) { try await $0.stored(operation.id) }
            #expect(seen?.state == .running && seen?.owner == owner)
            let outcome = PostgresQueue.Outcome(id: operation.id, owner: owner, attempt: 1, result: .completed(Data()))
            #expect(try await queue.finish([outcome]) == [operation.id])
            let ended = try await Self.withOtherProcess(on: database) { try await $0.stored(operation.id) }
            #expect(ended?.state == .completed)
        }
    }

    @Test("S27: an expired lease returns its operation to pending with the attempt counted, fencing the old owner out")
    func expiredLease() async throws {
        try await Self.withQueue { queue, database in
            try await queue.configure(Self.orders, bunchSize: 1, algorithm: .flat)
            let operation = Self.operation()
            _ = try await queue.enqueue([operation])
            let dead = UUID()
            // A lease of no time has expired by the next statement: the owner stands for a process that hung.
            let lost = try #require(try await queue.claim(.init(owner: dead, limit: 5, lease: .zero)).first)
            #expect(
                try await queue.claim(.init(owner: UUID(), limit: 5, lease: .seconds(30))).isEmpty, "bunch 1 is full")
            let survivor = UUID()
            let retaken = try await Self.withOtherProcess(on: database) { other in
                #expect(try await other.reclaimExpired() == [operation.id])
                return try #require(try await other.claim(.init(owner: survivor, limit: 5, lease: .seconds(30))).first)
            }
            #expect(retaken.operation.id == operation.id && retaken.attempt == 2)
            #expect(retaken.operation.idempotencyKey == lost.operation.idempotencyKey)
            #expect(try await queue.renew([operation.id], owner: dead, lease: .seconds(30)).isEmpty)
            #expect(try await queue.renew([operation.id], owner: survivor, lease: .seconds(30)) == [operation.id])
            #expect(
                !(try await queue.finish(operation.id, owner: dead, attempt: 1, result: .completed(Data("a".utf8)))))
            #expect(!(try await queue.retry(operation.id, owner: dead, attempt: 1, at: nil)))
            #expect(
                try await queue.finish(operation.id, owner: survivor, attempt: 2, result: .completed(Data("b".utf8))))
            let stored = try #require(try await queue.stored(operation.id))
            #expect(stored.state == .completed && stored.result == .completed(Data("b".utf8)) && stored.owner == nil)
            #expect(!(try await queue.finish(operation.id, owner: survivor, attempt: 2, result: .skipped)))
        }
    }

    @Test("S27: shutdown gives leases back at once: an unbegun attempt uncounted, a running one counted")
    func giveBack() async throws {
        try await Self.withQueue { queue, _ in
            try await queue.configure(Self.orders, bunchSize: 2, algorithm: .flat)
            let operations = [Self.operation(), Self.operation()]
            _ = try await queue.enqueue(operations)
            let owner = UUID()
            let claims = try await queue.claim(.init(owner: owner, limit: 5, lease: .seconds(30)))
            #expect(claims.count == 2)
            #expect(try await queue.giveBack([operations[0].id], owner: UUID(), counted: false).isEmpty)
            #expect(try await queue.giveBack([operations[0].id], owner: owner, counted: false) == [operations[0].id])
            #expect(try await queue.giveBack([operations[1].id], owner: owner, counted: true) == [operations[1].id])
            #expect(try await queue.stored(operations[0].id)?.attempts == 0)
            #expect(try await queue.stored(operations[1].id)?.attempts == 1)
            let again = try await queue.claim(.init(owner: UUID(), limit: 5, lease: .seconds(30)))
            #expect(again.map(\.attempt) == [1, 2])
        }
    }

    @Test("S28: under the commit graph, no operation of a later commit starts before every earlier one has finished")
    func commitGraph() async throws {
        try await Self.withQueue { queue, _ in
            try await queue.configure(Self.orders, bunchSize: 10, algorithm: .commitGraph)
            let earlier = [Self.operation(), Self.operation()]
            let later = [Self.operation(priority: 9)]
            _ = try await queue.enqueue(earlier)
            _ = try await queue.enqueue(later)
            let owner = UUID()
            let claims = try await queue.claim(.init(owner: owner, limit: 10, lease: .seconds(30)))
            #expect(claims.map(\.operation.id) == earlier.map(\.id))
            #expect(try await queue.finish(earlier[0].id, owner: owner, attempt: 1, result: .completed(Data())))
            #expect(try await queue.claim(.init(owner: owner, limit: 10, lease: .seconds(30))).isEmpty)
            #expect(try await queue.finish(earlier[1].id, owner: owner, attempt: 1, result: .skipped))
            let next = try await queue.claim(.init(owner: owner, limit: 10, lease: .seconds(30)))
            #expect(next.map(\.operation.id) == later.map(\.id))
        }
    }

    @Test("S28: a suspended sequence or DataPoint gives no claims to any process until every suspension is resumed")
    func suspensions() async throws {
        try await Self.withQueue { queue, database in
            try await queue.configure(Self.orders, bunchSize: 10, algorithm: .flat)
            _ = try await queue.enqueue([Self.operation()])
            try await queue.suspend(Self.orders)
            try await queue.suspend(nil)
            try await Self.withOtherProcess(on: database) { other in
                #expect(try await other.claim(.init(owner: UUID(), limit: 10, lease: .seconds(30))).isEmpty)
                try await other.resume(Self.orders)
                #expect(try await other.claim(.init(owner: UUID(), limit: 10, lease: .seconds(30))).isEmpty)
                try await other.resume(nil)
                #expect(try await other.claim(.init(owner: UUID(), limit: 10, lease: .seconds(30))).count == 1)
            }
            let unknown = await #expect(throws: RelayError.self) {
                try await queue.suspend(CallSequence.Name(rawValue: "nowhere"))
            }
            #expect(unknown?.code == .unknownSequence)
        }
    }

    @Test("S28: a bunch size holds fleet-wide and operations start in order, with four processes claiming at once")
    func bunchAcrossProcesses() async throws {
        try await Self.withQueue { queue, database in
            try await queue.configure(Self.orders, bunchSize: 3, algorithm: .flat)
            var operations: [CallOperation] = []
            for _ in 0..<20 {
                let commit = (0..<4).map { _ in Self.operation() }
                operations += commit
                _ = try await queue.enqueue(commit)
            }
            let running = Gauge()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await Self.withOtherProcess(on: database) { other in
                            let owner = UUID()
                            var idle = 0
                            while idle < 3 {
                                let claims = try await other.claim(.init(owner: owner, limit: 3, lease: .seconds(30)))
                                idle = claims.isEmpty ? idle + 1 : 0
                                running.add(claims.count)
                                for claim in claims {
                                    running.add(-1)
                                    #expect(
                                        try await other.finish(
                                            claim.operation.id, owner: owner, attempt: claim.attempt,
                                            result: .completed(Data())))
                                }
                                if claims.isEmpty { await Task.yield() }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(running.most <= 3)
            var started: [UUID] = []
            for try await id in try await queue.client.query(
                "SELECT id FROM relay_operations WHERE state = 3 ORDER BY started_at"
            ).decode(UUID.self) {
                started.append(id)
            }
            #expect(started.count == operations.count)
            // Claims of one sequence are serialized by its row's lock: an operation starts no more than one bunch
            // away from its place in the start order (the rows of one claim carry times in no particular order).
            for (place, operation) in operations.enumerated() {
                let startedAt = try #require(started.firstIndex(of: operation.id))
                #expect(abs(startedAt - place) < 3, "operation \(place) started \(startedAt)th")
            }
        }
    }
}

/// How many claims the test's processes hold at once, and the most they ever held.
private final class Gauge: Sendable {
    private let counts = Mutex((now: 0, most: 0))

    func add(_ change: Int) {
        counts.withLock {
            $0.now += change
            $0.most = max($0.most, $0.now)
        }
    }

    var most: Int { counts.withLock { $0.most } }
}
