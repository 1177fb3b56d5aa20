import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Testing

/// Every process's event streams tell what the whole fleet did.
@Suite(
    "S29 events across a fleet", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetEventTests {
    private typealias Fleet = PostgresFleetTests

    /// The lifecycle events of `ids` that `events` delivers, by operation, until each has ended.
    private static func lifecycles(
        of ids: Set<UUID>, in events: CallEventStream
    ) async -> [UUID: [String]] {
        var seen: [UUID: [String]] = [:]
        var ended: Set<UUID> = []
        for await event in events {
            guard let id = event.operationID, ids.contains(id) else { continue }
            guard event.kind.isEnqueued || event.kind.isStarted || event.kind.isTerminal else { continue }
            seen[id, default: []].append(event.kind.name)
            if event.kind.isTerminal { ended.insert(id) }
            if ended == ids { break }
        }
        return seen
    }

    @Test("S29: a stream of every event tells of operations other processes enqueue and run, each event once")
    func eventsAcrossProcesses() async throws {
        try await Fleet.withTwoProcesses { point, _ in
            let events = point.events()
            // Runs in the other process, which alone registered its sequence; and here.
            let there = CallOperation(kind: Fleet.work, sequenceName: Fleet.right)
            let here = CallOperation(kind: Fleet.work, sequenceName: Fleet.left)
            let handles = try await point.enqueue([there, here])
            #expect(try await Fleet.ranBy(handles) == ["A": 1, "B": 1])
            let seen = await Self.lifecycles(of: [there.id, here.id], in: events)
            #expect(seen[there.id] == ["enqueued", "started", "completed"], "\(seen)")
            #expect(seen[here.id] == ["enqueued", "started", "completed"], "\(seen)")
        }
    }

    @Test("S13/S29: a handle's events follow its operation while another process runs it, to its terminal event")
    func handleEventsAcrossProcesses() async throws {
        try await Fleet.withTwoProcesses { point, _ in
            // Suspended fleet-wide, so that the stream opens before the other process claims the operation.
            try await point.suspend()
            let handle = try await point.enqueue(CallOperation(kind: Fleet.work, sequenceName: Fleet.right))
            let events = try handle.events()
            try await point.resume()
            var kinds: [String] = []
            for await event in events { kinds.append(event.kind.name) }
            // Its start may come late or not at all: a transaction open elsewhere on the server holds the log back,
            // and then the end comes from the operation's row.
            #expect(kinds == ["started", "completed"] || kinds == ["completed"], "\(kinds)")
            #expect(try await handle.value == Data("B".utf8))
            // Opened once the handle has its outcome, a stream has ended already.
            var later = 0
            for await _ in try handle.events() { later += 1 }
            #expect(later == 0)
            // One that no handle here awaits is unknown here.
            let unknown = #expect(throws: RelayError.self) { try point.events(for: UUID()) }
            #expect(unknown?.code == .unknownOperation)
        }
    }

    @Test("S29: operations a third process enqueues are announced enqueued once, before they start, wherever they run")
    func eventsOfAnotherEnqueuer() async throws {
        try await Fleet.withTwoProcesses { point, database in
            let events = point.events()
            let here = CallOperation(kind: Fleet.work, sequenceName: Fleet.left)
            let there = CallOperation(kind: Fleet.work, sequenceName: Fleet.right)
            let later = CallOperation(kind: Fleet.work, sequenceName: Fleet.left)
            try await TestDatabase.withClient(database: database) { client in
                try await DataPoint.with(storage: PostgresFleetStorage(client: client, options: Fleet.options())) {
                    third in
                    _ = try await third.enqueue([here, there])
                    _ = try await third.enqueue([later], at: Date(timeIntervalSinceNow: 3600))
                }
            }
            // Cancelled from here while it waits in the database: the store cancels it, and the log tells.
            #expect(try await point.cancel(later.id))
            let seen = await Self.lifecycles(of: [here.id, there.id, later.id], in: events)
            #expect(seen[here.id] == ["enqueued", "started", "completed"], "\(seen)")
            #expect(seen[there.id] == ["enqueued", "started", "completed"], "\(seen)")
            #expect(seen[later.id] == ["enqueued", "cancelled"], "\(seen)")
        }
    }

    @Test("S29: a failure in another process reaches the stream with its reason; the log keeps no copy of outcomes")
    func failureAcrossProcesses() async throws {
        let refusing = ClosureExecutor { _, _ in .failed(reason: "refused") }
        try await Fleet.withTwoProcesses(other: refusing) { point, database in
            let events = point.events()
            let there = CallOperation(kind: Fleet.work, sequenceName: Fleet.right)
            let handle = try await point.enqueue(there)
            _ = try await handle.outcome
            var failure: CallFailure?
            for await event in events where event.operationID == there.id && event.kind.isTerminal {
                failure = event.kind.failure
                break
            }
            #expect(failure?.reason == "refused")
            #expect(
                try await Fleet.count("SELECT count(*) FROM relay_events WHERE result IS NOT NULL", in: database) == 0)
        }
    }

    /// The suspensions and resumes that `events` delivers, in words, until operation `id` has ended.
    private static func suspensions(until id: UUID, in events: CallEventStream) async -> [String] {
        var seen: [String] = []
        for await event in events {
            if event.operationID == id, event.kind.isTerminal { break }
            guard event.kind.isSuspended || event.kind.isResumed else { continue }
            seen.append("\(event.sequenceName?.rawValue ?? "fleet") \(event.kind)")
        }
        return seen
    }

    @Test("S29: suspensions and resumes in one process reach every process's stream of every event, each once")
    func suspensionsAcrossProcesses() async throws {
        try await Fleet.withTwoProcesses { point, database in
            try await TestDatabase.withClient(database: database) { client in
                // A third process, which runs nothing, follows every event.
                try await DataPoint.with(storage: PostgresFleetStorage(client: client, options: Fleet.options())) {
                    third in
                    let there = third.events()
                    let here = point.events()
                    // Once the third process hears of this operation's end, it follows the log.
                    let first = CallOperation(kind: Fleet.work, sequenceName: Fleet.left)
                    _ = try await point.execute(first)
                    #expect(await Self.suspensions(until: first.id, in: there).isEmpty)

                    let left = try #require(point.sequence(named: Fleet.left))
                    try await point.suspend(reason: "deploy")
                    try await left.suspend(reason: "left's turn")
                    try await left.suspend(reason: "counted, not announced")
                    try await left.resume(reason: "counted down, not announced")
                    try await left.resume(reason: "left's done")
                    try await point.resume(reason: "deployed")
                    // Once a stream hears of this operation's end, it has heard all it will of the suspensions.
                    let last = CallOperation(kind: Fleet.work, sequenceName: Fleet.left)
                    _ = try await point.execute(last)
                    let expected = [
                        "fleet suspended: deploy", "left suspended: left's turn", "left resumed: left's done",
                        "fleet resumed: deployed",
                    ]
                    #expect(await Self.suspensions(until: last.id, in: there) == expected)
                    #expect(await Self.suspensions(until: last.id, in: here) == expected, "announced here once")
                }
            }
        }
    }

    @Test("S29: a hold set and released from another process, on an operation waiting in the database, reaches streams")
    func holdsAcrossProcesses() async throws {
        try await Fleet.withTwoProcesses { point, database in
            let events = point.events()
            let later = CallOperation(kind: Fleet.work, sequenceName: Fleet.left)
            _ = try await point.enqueue([later], at: Date(timeIntervalSinceNow: 3600))
            try await TestDatabase.withClient(database: database) { client in
                try await DataPoint.with(storage: PostgresFleetStorage(client: client, options: Fleet.options())) {
                    third in
                    try await third.hold(later.id, until: Date(timeIntervalSinceNow: 7200), context: "audit")
                    try await third.hold(later.id, until: nil, context: "audit")
                }
            }
            #expect(try await point.cancel(later.id))
            var kinds: [String] = []
            for await event in events where event.operationID == later.id {
                kinds.append(event.kind.name)
                if event.kind.isHeld { #expect("\(event.kind)".hasSuffix("(audit)"), "\(event.kind)") }
                if event.kind.isTerminal { break }
            }
            #expect(kinds == ["enqueued", "held", "held", "cancelled"], "\(kinds)")
        }
    }
}
