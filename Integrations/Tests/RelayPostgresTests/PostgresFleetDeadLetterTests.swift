import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Synchronization
import Testing

/// Dead letters of a fleet: replayed and purged from any process, wherever they failed.
@Suite(
    "S29 dead letters across a fleet", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetDeadLetterTests {
    private typealias Fleet = PostgresFleetTests

    @Test("S29: an operation that failed in another process is replayed and purged from this one")
    func replayedAndPurged() async throws {
        let calls = Mutex(0)
        let failsFirst = ClosureExecutor { _, _ in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            return call == 1 ? .failed(reason: "refused") : .completed(Data("B".utf8))
        }
        try await Fleet.withTwoProcesses(other: failsFirst) { point, database in
            let operation = CallOperation(kind: Fleet.work, sequenceName: Fleet.right)
            let failed = try await point.enqueue(operation)
            guard case .failed(let failure) = try await failed.outcome else {
                Issue.record("the first attempt was to fail")
                return
            }
            #expect(failure.reason == "refused")
            let unfinished = CallOperation(
                kind: Fleet.work, sequenceName: Fleet.right, dependencies: [operation.id],
                onDependencyFailure: .runAnyway)
            _ = try await point.enqueue(unfinished, at: Date(timeIntervalSinceNow: 3600))

            // This process never held it: the database has it.
            let replayed = try await point.replay(operation.id)
            #expect(replayed.id != operation.id)
            #expect(try await replayed.value == Data("B".utf8))
            let notReplayable = await #expect(throws: RelayError.self) { try await point.replay(unfinished.id) }
            #expect(notReplayable?.code == .notReplayable)

            let refused = await #expect(throws: RelayError.self) {
                try await point.purge([operation.id, unfinished.id])
            }
            #expect(refused?.code == .operationUnfinished && refused?.operationIDs == [unfinished.id])
            #expect(try await point.status(of: operation.id) != nil, "nothing was purged")
            #expect(try await point.purge([operation.id, replayed.id, UUID()]) == 2)
            #expect(try await point.status(of: operation.id) == nil)
            let unknown = await #expect(throws: RelayError.self) { try await point.replay(operation.id) }
            #expect(unknown?.code == .unknownOperation)
            #expect(try await Fleet.count("SELECT count(*) FROM relay_operations", in: database) == 1)
        }
    }

    @Test("S14 S29: the fleet's operations list from any process by state, sequence and kind, a page at a time")
    func listedFleetWide() async throws {
        try await TestDatabase.with { client, _ in
            let empty = try await PostgresFleetStorage.operations(of: client)
            #expect(empty.statuses.isEmpty && empty.next == nil)
        }
        let mail = CallKind(rawValue: "mail")
        let failsSome = ClosureExecutor { operation, _ in
            operation.payload == Data("fail".utf8) ? .failed(reason: "refused") : .completed(Data("B".utf8))
        }
        try await Fleet.withTwoProcesses(other: failsSome) { point, database in
            // Run in the other process: three fail, two complete; three of another kind wait for an hour.
            let ran = ["fail", "ok", "fail", "ok", "fail"].map {
                CallOperation(kind: Fleet.work, sequenceName: Fleet.right, payload: Data($0.utf8))
            }
            for handle in try await point.enqueue(ran) { _ = try await handle.outcome }
            let waiting = (0..<3).map { _ in CallOperation(kind: mail, sequenceName: Fleet.right) }
            _ = try await point.enqueue(waiting, at: Date(timeIntervalSinceNow: 3600))
            let failed = [ran[0].id, ran[2].id, ran[4].id]

            try await TestDatabase.withClient(database: database) { client in
                var query = OperationQuery.deadLetters(limit: 2)
                var listed: [CallStatus] = []
                var pages = 0
                repeat {
                    let page = try await PostgresFleetStorage.operations(query, of: client)
                    listed += page.statuses
                    pages += 1
                    // The cursor goes through its text form, as a dashboard's link carries it.
                    query.after = page.next.flatMap { OperationPage.Cursor($0.description) }
                    #expect(query.after == page.next)
                } while query.after != nil
                #expect(pages == 2 && listed.map(\.id) == failed)
                #expect(listed.map(Self.named) == ["failed", "failed", "failed"])

                let completed = try await PostgresFleetStorage.operations(
                    OperationQuery(states: [.completed]), of: client)
                #expect(completed.statuses.map(\.id) == [ran[1].id, ran[3].id])

                // A kind is read from each operation's body: pages of one fill past the others.
                let first = try await PostgresFleetStorage.operations(OperationQuery(kind: mail, limit: 2), of: client)
                #expect(first.statuses.map(\.id) == waiting.prefix(2).map(\.id))
                let second = try await PostgresFleetStorage.operations(
                    OperationQuery(kind: mail, limit: 2, after: first.next), of: client)
                #expect(second.statuses.map(\.id) == [waiting[2].id] && second.next == nil)
                #expect((first.statuses + second.statuses).map(Self.named) == ["held", "held", "held"])

                let none = try await PostgresFleetStorage.operations(
                    OperationQuery(states: [.pending], kind: Fleet.work), of: client)
                #expect(none.statuses.isEmpty && none.next == nil)
                let left = try await PostgresFleetStorage.operations(OperationQuery(sequence: Fleet.left), of: client)
                #expect(left.statuses.isEmpty)
                let refused = await #expect(throws: RelayError.self) {
                    try await PostgresFleetStorage.operations(OperationQuery(limit: 0), of: client)
                }
                #expect(refused?.code == .invalidArgument)
            }
        }
    }

    /// What a listed status says of its state: failed, why it waits, or other.
    private static func named(_ status: CallStatus) -> String {
        switch status.state {
        case .finished(.failed): "failed"
        case .pending(let waiting): waiting.name
        default: "other"
        }
    }
}
