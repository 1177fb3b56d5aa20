import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Testing

/// Cancellation from the process that enqueued, of operations that wait in the database or run in another process.
@Suite(
    "S29 cancellation across a fleet", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetCancelTests {
    private typealias Fleet = PostgresFleetTests

    /// Runs `body` in process A while process B runs sequence `right`, each operation held at `gate` until the gate
    /// opens or the attempt is cancelled.
    private static func withRunner<Result: Sendable>(
        gate: Gate, _ body: @Sendable (DataPoint) async throws -> Result
    ) async throws -> Result {
        let held = ClosureExecutor { _, _ in
            await gate.wait()
            try Task.checkCancellation()
            return .completed(Data("B".utf8))
        }
        return try await Fleet.withTwoProcesses(other: held) { point, _ in
            defer { gate.open() }
            return try await body(point)
        }
    }

    @Test("S29: an operation that waits in the database is cancelled from another process, its dependents with it")
    func waitingCancelled() async throws {
        let gate = Gate()
        try await Self.withRunner(gate: gate) { point in
            let first = CallOperation(kind: Fleet.work, sequenceName: Fleet.right)
            let second = CallOperation(kind: Fleet.work, sequenceName: Fleet.right, dependencies: [first.id])
            let third = CallOperation(kind: Fleet.work, sequenceName: Fleet.right, dependencies: [second.id])
            let handles = try await point.enqueue([first, second, third])
            #expect(try await point.cancel(second.id))
            #expect(try await handles[1].outcome == .cancelled(.requested))
            #expect(try await handles[2].outcome == .cancelled(.dependencyCancelled(second.id)))
            #expect(try await !point.cancel(second.id), "an operation that ended is left as it is")
            gate.open()
            #expect(try await handles[0].value == Data("B".utf8))
            let unknown = await #expect(throws: RelayError.self) { try await point.cancel(UUID()) }
            #expect(unknown?.code == .unknownOperation)
        }
    }

    @Test("S29: an operation that runs in another process is cancelled there, and its handle here settles")
    func runningCancelled() async throws {
        let gate = Gate()
        try await Self.withRunner(gate: gate) { point in
            let handle = try await point.enqueue(CallOperation(kind: Fleet.work, sequenceName: Fleet.right))
            await gate.waitForArrivals(1)
            #expect(try await point.cancel(handle.id))
            #expect(try await !point.cancel(handle.id), "asked once already")
            #expect(try await handle.outcome == .cancelled(.requested))
            #expect(gate.arrivals == 1, "the operation ran once, and was not run again")
        }
    }
}
