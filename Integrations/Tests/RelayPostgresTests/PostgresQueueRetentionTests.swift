import Foundation
import PostgresNIO
import Relay
import Testing

@testable import RelayPostgres

/// The fleet's database keeps finished operations as the DataPoints' retention policy says, and no longer.
@Suite(
    "S29 retention in the fleet's queue", .timeLimit(.minutes(1)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresQueueRetentionTests {
    private typealias Queue = PostgresQueueTests

    @Test("S29: finished operations past the retention's count or window leave the database with their links")
    func pruned() async throws {
        try await Queue.withQueue { queue, database in
            try await queue.configure(Queue.orders, bunchSize: 10, algorithm: .flat)
            let first = Queue.operation()
            let second = Queue.operation()
            let cancelled = Queue.operation()
            let waiting = Queue.operation(after: [first.id])
            _ = try await queue.enqueue([first, second, cancelled, waiting])
            let owner = UUID()
            let claims = try await queue.claim(.init(owner: owner, limit: 3, lease: .seconds(30)))
            #expect(Set(claims.map(\.operation.id)) == [first.id, second.id, cancelled.id])
            // One transaction each, so that they finish in this order.
            #expect(try await queue.finish(first.id, owner: owner, attempt: 1, result: .completed(Data())))
            #expect(try await queue.finish(second.id, owner: owner, attempt: 1, result: .completed(Data())))
            #expect(try await queue.finish(cancelled.id, owner: owner, attempt: 1, result: .cancelled(.requested)))

            // One completed operation kept: the older goes, with its link to the operation that waited for it.
            let kept = RetentionPolicy(maximumOperations: 1, maximumDeadLetters: 1)
            #expect(try await queue.prune(kept) == 1)
            #expect(try await queue.stored(first.id) == nil)
            #expect(try await queue.stored(second.id)?.state == .completed)
            #expect(try await queue.stored(cancelled.id)?.state == .cancelled)
            #expect(try await PostgresFleetTests.count("SELECT count(*) FROM relay_dependencies", in: database) == 0)
            #expect(try await queue.prune(kept) == 0, "nothing more is past its bounds")

            // Past a window of no time, every finished one goes; the unfinished one stays.
            #expect(try await queue.prune(.window(.zero)) == 2)
            #expect(try await queue.stored(second.id) == nil)
            #expect(try await queue.stored(cancelled.id) == nil)
            #expect(try await queue.stored(waiting.id)?.state == .pending)
        }
    }
}
