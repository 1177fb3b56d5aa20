import Foundation
import PostgresNIO
import Relay
import RelayTesting
import Testing

@testable import RelayPostgres

/// Suspensions made through a DataPoint's API on a fleet: counted in the database, obeyed by every process's claims.
@Suite(
    "S28 suspensions across a fleet", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetSuspensionTests {
    private typealias Fleet = PostgresFleetTests

    /// Whether a process that has not claimed yet would get any operation now.
    private static func claimable(in database: String) async throws -> Bool {
        try await TestDatabase.withClient(database: database) { client in
            let (queue, owner) = (PostgresQueue(client: client, logger: TestDatabase.logger), UUID())
            let claims = try await queue.claim(.init(owner: owner, limit: 100, lease: .seconds(1)))
            // Given back uncounted at once, so that the fleet under test runs them.
            _ = try await queue.giveBack(claims.map(\.operation.id), owner: owner, counted: false)
            return !claims.isEmpty
        }
    }

    @Test("S28: a DataPoint suspended in one process claims nothing anywhere until another process resumes it")
    func suspendedFleetWide() async throws {
        try await Fleet.withTwoProcesses { point, database in
            let recorder = EventRecorder(point)
            #expect(try await point.suspend(reason: "maintenance") == 1)
            #expect(recorder.events.map(\.kind) == [.suspended(reason: "maintenance")])
            // Process B runs sequence `right`; while the fleet is suspended, nothing of it can be claimed.
            let handle = try await point.enqueue(CallOperation(kind: Fleet.work, sequenceName: Fleet.right))
            #expect(try await !Self.claimable(in: database))
            // A third process, which runs nothing, resumes what the first suspended.
            let resumed = try await TestDatabase.withClient(database: database) { client in
                try await DataPoint.with(storage: PostgresFleetStorage(client: client, options: Fleet.options())) {
                    try await $0.resume(reason: "done")
                }
            }
            #expect(resumed == 0)
            #expect(try await handle.value == Data("B".utf8))
            #expect(try await point.resume() == 0, "a resume of what is not suspended changes nothing")
        }
    }

    @Test("S28: a sequence suspended through its CallSequence is claimed by no process until it is resumed")
    func sequenceSuspended() async throws {
        try await Fleet.withTwoProcesses { point, database in
            let left = try #require(point.sequence(named: Fleet.left))
            #expect(try await left.suspend() == 1)
            #expect(try await left.suspend() == 2)
            let handle = try await point.enqueue(CallOperation(kind: Fleet.work, sequenceName: Fleet.left))
            #expect(try await !Self.claimable(in: database))
            // The other sequence runs meanwhile.
            let other = try await point.execute(CallOperation(kind: Fleet.work, sequenceName: Fleet.right))
            #expect(other == Data("B".utf8))
            #expect(try await left.resume() == 1)
            #expect(try await !Self.claimable(in: database))
            #expect(try await left.resume() == 0)
            #expect(try await handle.value == Data("A".utf8))
        }
    }
}
