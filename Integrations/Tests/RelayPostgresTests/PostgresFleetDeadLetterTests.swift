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
}
