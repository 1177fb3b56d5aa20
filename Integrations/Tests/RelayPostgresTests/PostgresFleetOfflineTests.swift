import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Synchronization
import Testing

/// Offline destinations, kept for the whole fleet.
@Suite(
    "S9 S28 offline destinations on a fleet", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetOfflineTests {
    typealias Fleet = PostgresFleetTests

    static let flaky = CallKind(rawValue: "flaky")

    /// A destination that does not answer while `down` holds, and answers with `up` once it does not.
    final class Destination: Sendable {
        let down = Mutex(true)
        let calls = Mutex(0)
        let first = Gate()

        var executor: ClosureExecutor {
            ClosureExecutor { [self] _, _ in
                calls.withLock { $0 += 1 }
                first.open()
                return down.withLock { $0 } ? .offline(reason: "refused") : .completed(Data("up".utf8))
            }
        }
    }

    /// Runs `body` with DataPoints of two processes on one new database, both running `flaky` calls to
    /// `destination` and `work` on the sequence `left`, of bunch size 1.
    static func withTwoProcesses<Result: Sendable>(
        _ destination: Destination, _ body: @Sendable (DataPoint, DataPoint, String) async throws -> Result
    ) async throws -> Result {
        try await TestDatabase.with { client, database in
            try await TestDatabase.withClient(database: database) { other in
                let executors: [CallKind: any CallExecutor] = [
                    Fleet.work: Fleet.runner("A"), flaky: destination.executor,
                ]
                return try await DataPoint.with(
                    storage: PostgresFleetStorage(client: client, options: Fleet.options()), executors: executors
                ) { first in
                    try await first.upsertCallSequence(CallSequence(name: Fleet.left, bunchSize: 1))
                    return try await DataPoint.with(
                        storage: PostgresFleetStorage(client: other, options: Fleet.options()), executors: executors
                    ) { second in
                        try await second.upsertCallSequence(CallSequence(name: Fleet.left, bunchSize: 1))
                        return try await body(first, second, database)
                    }
                }
            }
        }
    }

    @Test("S9/S28: an offline destination frees its sequence's slot fleet-wide; its calls run once a probe answers")
    func offlineForTheFleet() async throws {
        let destination = Destination()
        try await Self.withTwoProcesses(destination) { first, second, database in
            let calls = (0..<3).map { _ in CallOperation(kind: Self.flaky, sequenceName: Fleet.left) }
            let handles = try await first.enqueue(calls)
            await destination.first.wait()
            // The sequence's one slot is free for another destination, in either process, while this one is down.
            let other = try await second.execute(CallOperation(kind: Fleet.work, sequenceName: Fleet.left))
            #expect(other == Data("A".utf8) || other == Data("B".utf8))
            #expect(
                try await Fleet.count(
                    "SELECT count(*) FROM relay_destinations WHERE destination = 'flaky'", in: database) == 1)
            let waiting = try await first.status(of: calls[2].id)?.state
            if case .pending(let why) = waiting {
                #expect(why.name == "offline" || why.name == "ready", "\(why)")
            }
            destination.down.withLock { $0 = false }
            for handle in handles { #expect(try await handle.value == Data("up".utf8)) }
            #expect(try await Fleet.count("SELECT count(*) FROM relay_destinations", in: database) == 0)
            // Offline attempts are given back: each call counts the one attempt that answered.
            #expect(
                try await Fleet.count(
                    "SELECT count(*) FROM relay_operations WHERE sequence = 'left' AND attempts <> 1", in: database)
                    == 0)
        }
    }

    @Test("S9/S28: a call that waits for an offline destination fails past its maximum elapsed time, saying so")
    func offlineTooLong() async throws {
        let destination = Destination()
        try await Self.withTwoProcesses(destination) { first, _, database in
            let call = CallOperation(
                kind: Self.flaky, sequenceName: Fleet.left, retryPolicy: RetryPolicy(maximumElapsed: .seconds(1)))
            let handle = try await first.enqueue(call)
            guard case .failed(let failure) = try await handle.outcome else {
                Issue.record("the call did not fail")
                return
            }
            #expect(failure.cause == .offlineTooLong, "\(failure)")
            #expect(try await Fleet.count("SELECT count(*) FROM relay_operations WHERE state = 5", in: database) == 1)
        }
    }

    /// The first `count` events of destinations that `events` delivers, in words.
    private static func destinationEvents(_ count: Int, in events: CallEventStream) async -> [String] {
        var seen: [String] = []
        for await event in events where event.kind.isOffline || event.kind.isOnline {
            seen.append("\(event.sequenceName?.rawValue ?? "fleet"): \(event.kind)")
            if seen.count == count { break }
        }
        return seen
    }

    @Test("S9/S29: a destination gone offline, then online, is announced to every process's stream of every event")
    func offlineAnnounced() async throws {
        let destination = Destination()
        try await Self.withTwoProcesses(destination) { first, second, _ in
            let (here, there) = (first.events(), second.events())
            let handle = try await first.enqueue(CallOperation(kind: Self.flaky, sequenceName: Fleet.left))
            await destination.first.wait()
            // The sequence's one slot is free only once the call has been given back, its destination offline.
            _ = try await second.execute(CallOperation(kind: Fleet.work, sequenceName: Fleet.left))
            destination.down.withLock { $0 = false }
            #expect(try await handle.value == Data("up".utf8))
            // Of the whole fleet, whichever process found it offline: on a shared store the log is every process's
            // source.
            let expected = ["fleet: flaky is offline: flaky did not answer", "fleet: flaky is online: it answered"]
            let heardHere = await Self.destinationEvents(2, in: here)
            #expect(heardHere == expected, "\(heardHere)")
            let heardThere = await Self.destinationEvents(2, in: there)
            #expect(heardThere == expected, "\(heardThere)")
        }
    }
}
