import Foundation
import PostgresNIO
import Relay
import Testing

@testable import RelayPostgres

/// The fleet's queue across processes: dependencies released under the dependents' row locks, cancellation passed on,
/// commits in the application's transaction, snapshots numbered fleet-wide, and changes announced on commit.
@Suite(
    "S29 S30 the fleet's dependency graph", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresQueueGraphTests {
    private typealias Queues = PostgresQueueTests

    @Test("S29: fan-in never misses a release when two dependencies finish at once in two processes")
    func fanIn() async throws {
        try await Queues.withQueue { queue, database in
            try await queue.configure(Queues.orders, bunchSize: 100, algorithm: .flat)
            for _ in 0..<20 {
                let parents = [Queues.operation(), Queues.operation()]
                let child = Queues.operation(after: Set(parents.map(\.id)))
                _ = try await queue.enqueue(parents + [child])
                let claims = try await queue.claim(.init(owner: UUID(), limit: 100, lease: .seconds(30)))
                #expect(Set(claims.map(\.operation.id)) == Set(parents.map(\.id)))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for claim in claims {
                        let owner = try #require(try await queue.stored(claim.operation.id)?.owner)
                        group.addTask {
                            try await Queues.withOtherProcess(on: database) { other in
                                let recorded = try await other.finish(
                                    claim.operation.id, owner: owner, attempt: 1, result: .completed(Data()))
                                #expect(recorded)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(try await queue.stored(child.id)?.state == .pending)
                let next = try await queue.claim(.init(owner: UUID(), limit: 100, lease: .seconds(30)))
                #expect(next.map(\.operation.id) == [child.id])
                #expect(
                    try await queue.finish(
                        child.id, owner: try #require(try await queue.stored(child.id)?.owner),
                        attempt: 1, result: .skipped))
            }
        }
    }

    @Test("S29: a dependent enqueued while its dependency finishes in another process is released, never stranded")
    func enqueueRacingFinish() async throws {
        try await Queues.withQueue { queue, database in
            try await queue.configure(Queues.orders, bunchSize: 100, algorithm: .flat)
            for round in 0..<20 {
                let parent = Queues.operation()
                _ = try await queue.enqueue([parent])
                let owner = UUID()
                _ = try await queue.claim(.init(owner: owner, limit: 100, lease: .seconds(30)))
                let child = Queues.operation(after: [parent.id])
                let failing = round.isMultiple(of: 2)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { _ = try await queue.enqueue([child]) }
                    group.addTask {
                        try await Queues.withOtherProcess(on: database) { other in
                            let result: CallResult =
                                failing ? .failed(CallFailure(reason: "HTTP 500", attempts: 1)) : .completed(Data())
                            let recorded = try await other.finish(parent.id, owner: owner, attempt: 1, result: result)
                            #expect(recorded)
                        }
                    }
                    try await group.waitForAll()
                }
                let stored = try #require(try await queue.stored(child.id))
                if failing {
                    #expect(stored.result == .cancelled(.dependencyFailed(parent.id)))
                } else {
                    #expect(stored.state == .pending)
                    let claims = try await queue.claim(.init(owner: owner, limit: 100, lease: .seconds(30)))
                    #expect(try await queue.finish(child.id, owner: owner, attempt: 1, result: .skipped))
                    #expect(claims.map(\.operation.id) == [child.id])
                }
            }
        }
    }

    @Test("S5: a failure cancels its dependents transitively, naming the cause, and releases those that run anyway")
    func cascade() async throws {
        try await Queues.withQueue { queue, _ in
            try await queue.configure(Queues.orders, bunchSize: 10, algorithm: .flat)
            let root = Queues.operation()
            let child = Queues.operation(after: [root.id])
            let grandchild = Queues.operation(after: [child.id])
            let anyway = Queues.operation(after: [child.id], runAnyway: true)
            _ = try await queue.enqueue([root, child, grandchild, anyway])
            let owner = UUID()
            let claims = try await queue.claim(.init(owner: owner, limit: 10, lease: .seconds(30)))
            #expect(claims.map(\.operation.id) == [root.id])
            let failure = CallFailure(reason: "HTTP 422", attempts: 1)
            #expect(try await queue.finish(root.id, owner: owner, attempt: 1, result: .failed(failure)))
            #expect(try await queue.stored(root.id)?.result == .failed(failure))
            #expect(try await queue.stored(child.id)?.result == .cancelled(.dependencyFailed(root.id)))
            #expect(try await queue.stored(grandchild.id)?.result == .cancelled(.dependencyCancelled(child.id)))
            #expect(try await queue.stored(anyway.id)?.state == .pending)
            // A commit naming a cancelled operation adds its dependent cancelled, and a run-anyway one ready.
            let late = Queues.operation(after: [grandchild.id])
            let lateAnyway = Queues.operation(after: [late.id], runAnyway: true)
            _ = try await queue.enqueue([late, lateAnyway])
            #expect(try await queue.stored(late.id)?.result == .cancelled(.dependencyCancelled(grandchild.id)))
            #expect(try await queue.stored(lateAnyway.id)?.state == .pending)
        }
    }

    @Test("S31: an enqueue whose call lost its connection after committing is answered as that call would have been")
    func enqueueAfterLostCall() async throws {
        try await Queues.withQueue { queue, _ in
            try await queue.configure(Queues.orders, bunchSize: 1, algorithm: .flat)
            let (one, two, three) = (Queues.operation(), Queues.operation(), Queues.operation())
            let first = try await queue.enqueue([one, two])
            // The way an enqueue takes after its call lost its connection: it finds the call's operations stored,
            // under the call's number, and answers that it added them there.
            let found = try await queue.transaction("enqueueing after a lost call") {
                try await queue.enqueue([one, two], afterLostCall: true, on: $0)
            }
            #expect(found.added == [one.id, two.id] && found.snapshot == first.snapshot)
            // Not when some are not stored (the call did not commit), nor under two numbers (two commits did).
            let partly = try await queue.transaction("enqueueing after a lost call") {
                try await queue.enqueue([one, three], afterLostCall: true, on: $0)
            }
            #expect(partly.added == [three.id] && partly.snapshot > first.snapshot)
            let apart = try await queue.transaction("enqueueing after a lost call") {
                try await queue.enqueue([one, three], afterLostCall: true, on: $0)
            }
            #expect(apart.added.isEmpty)
        }
    }

    @Test("S1 S17: a known id changes nothing, other content under it or an unknown dependency enqueues nothing")
    func badCommits() async throws {
        try await Queues.withQueue { queue, _ in
            try await queue.configure(Queues.orders, bunchSize: 1, algorithm: .flat)
            let known = Queues.operation()
            let first = try await queue.enqueue([known])
            let again = try await queue.enqueue([known])
            #expect(again.added.isEmpty && again.snapshot == first.snapshot + 1)
            var changed = known
            changed.priority = 9
            let fresh = Queues.operation()
            let conflict = await #expect(throws: RelayError.self) { try await queue.enqueue([fresh, changed]) }
            #expect(conflict?.code == .conflictingOperation)
            let missing = UUID()
            let unknown = await #expect(throws: RelayError.self) {
                try await queue.enqueue([fresh, Queues.operation(after: [missing])])
            }
            #expect(unknown?.code == .unknownDependency)
            #expect(unknown?.message.contains(missing.uuidString) == true)
            #expect(try await queue.stored(fresh.id) == nil)
            let empty = await #expect(throws: RelayError.self) { try await queue.enqueue([]) }
            #expect(empty?.code == .invalidArgument)
            let bunch = await #expect(throws: RelayError.self) {
                try await queue.configure(Queues.orders, bunchSize: 0, algorithm: .flat)
            }
            #expect(bunch?.code == .invalidBunchSize)
        }
    }

    @Test("S30: a commit in the application's transaction is gone when it rolls back, and runs once it commits")
    func applicationTransaction() async throws {
        struct RolledBack: Error {}
        try await Queues.withQueue { queue, _ in
            try await queue.configure(Queues.orders, bunchSize: 10, algorithm: .flat)
            let abandoned = Queues.operation()
            await #expect(throws: (any Error).self) {
                try await queue.client.withTransaction(logger: TestDatabase.logger) { connection in
                    _ = try await queue.enqueue([abandoned], on: connection)
                    throw RolledBack()
                }
            }
            #expect(try await queue.stored(abandoned.id) == nil)
            #expect(try await queue.claim(.init(owner: UUID(), limit: 10, lease: .seconds(30))).isEmpty)
            let kept = Queues.operation()
            try await queue.client.withTransaction(logger: TestDatabase.logger) { connection in
                try await connection.query("CREATE TABLE orders (id uuid PRIMARY KEY)", logger: TestDatabase.logger)
                try await connection.query("INSERT INTO orders VALUES (\(kept.id))", logger: TestDatabase.logger)
                _ = try await queue.enqueue([kept], on: connection)
            }
            let claims = try await queue.claim(.init(owner: UUID(), limit: 10, lease: .seconds(30)))
            #expect(claims.map(\.operation.id) == [kept.id])
        }
    }

    @Test("S29: snapshot numbers stay unique and gapless fleet-wide when four processes enqueue at once")
    func snapshots() async throws {
        try await Queues.withQueue { queue, database in
            try await queue.configure(Queues.orders, bunchSize: 1, algorithm: .flat)
            let numbers = try await withThrowingTaskGroup(of: [UInt64].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await Queues.withOtherProcess(on: database) { other in
                            var numbers: [UInt64] = []
                            for _ in 0..<25 { numbers.append(try await other.enqueue([Queues.operation()]).snapshot) }
                            return numbers
                        }
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(numbers.sorted() == Array(1...100))
        }
    }

    @Test("S29: listeners hear of ready work and of finished operations when the transaction commits")
    func announcements() async throws {
        try await Queues.withQueue { queue, database in
            try await queue.configure(Queues.orders, bunchSize: 10, algorithm: .flat)
            let operation = Queues.operation()
            let config = try TestDatabase.connectionConfiguration(database: database)
            let listener = try await PostgresConnection.connect(
                configuration: config, id: 9, logger: TestDatabase.logger)
            defer { Task { try? await listener.close() } }
            let heard = try await listener.listen(on: PostgresQueue.readyChannel) { ready in
                try await listener.listen(on: PostgresQueue.finishedChannel) { finished in
                    _ = try await queue.enqueue([operation])
                    var readyNotes = ready.makeAsyncIterator()
                    _ = try await readyNotes.next()
                    let owner = UUID()
                    _ = try await queue.claim(.init(owner: owner, limit: 10, lease: .seconds(30)))
                    _ = try await queue.finish(operation.id, owner: owner, attempt: 1, result: .completed(Data()))
                    var finishedNotes = finished.makeAsyncIterator()
                    return try await finishedNotes.next()?.payload
                }
            }
            #expect(heard == operation.id.uuidString)
        }
    }
}
