import Foundation
import Testing

@testable import Relay

/// Streams that come back after a sequence number (S34): what the DataPoint keeps of the events they missed comes
/// first, exactly once and in order, then every later event.
@Suite("S34 event streams that resume", .timeLimit(.minutes(3)))
struct EventResumeTests {
    /// Takes `count` events from `iterator`.
    private static func take(_ count: Int, from iterator: inout CallEventStream.Iterator) async -> [CallEvent] {
        var events: [CallEvent] = []
        while events.count < count, let event = await iterator.next() { events.append(event) }
        return events
    }

    /// A suspended DataPoint whose every enqueue is one event, numbered in order; with a history, the suspension is
    /// event 1.
    private static func point(history: Int) async throws -> DataPoint {
        let point = try await DataPoint(
            storage: .volatile, configuration: DataPoint.Configuration(eventHistorySize: history))
        point.registerBasics()
        try await point.suspend()
        return point
    }

    @Test("S34: a stream after a number gets the kept events after it, then later ones, none twice, none missed")
    func resumeFromKeptEvents() async throws {
        let point = try await Self.point(history: 100)
        var first = point.events().makeAsyncIterator()
        for _ in 0..<5 { try await point.enqueue(CallOperation(kind: .noop)) }
        let seen = await Self.take(5, from: &first)
        let lastSeen = seen[1].sequenceNumber
        var resumed = point.events(after: lastSeen).makeAsyncIterator()
        try await point.enqueue(CallOperation(kind: .noop))
        let caughtUp = await Self.take(4, from: &resumed)
        #expect(caughtUp.map(\.sequenceNumber) == Array(lastSeen + 1...lastSeen + 4))
        #expect(caughtUp.prefix(3).map(\.operationID) == seen.suffix(3).map(\.operationID))
        #expect(caughtUp.allSatisfy { $0.kind.droppedEvents == nil })
        try await point.shutdown()
    }

    @Test("S34: events no longer kept are counted in a notice first, which says it names no finished operation")
    func missedEventsAreCounted() async throws {
        let point = try await Self.point(history: 2)
        for _ in 0..<5 { try await point.enqueue(CallOperation(kind: .noop)) }
        var resumed = point.events(after: 1).makeAsyncIterator()
        let events = await Self.take(3, from: &resumed)
        let notice = try #require(events.first?.kind.droppedEvents)
        #expect(notice.count == 3, "events 2 to 4 are gone")
        #expect(!notice.namesEveryFinished)
        #expect(events.first?.sequenceNumber == 4)
        #expect(events.dropFirst().map(\.sequenceNumber) == [5, 6])
        try await point.shutdown()
    }

    @Test("S34: without a history, the notice counts every event since; a number from an earlier run replays all kept")
    func noHistoryAndEarlierRuns() async throws {
        let bare = try await Self.point(history: 0)
        var everything = bare.events().makeAsyncIterator()
        for _ in 0..<3 { try await bare.enqueue(CallOperation(kind: .noop)) }
        _ = await Self.take(3, from: &everything)
        var resumed = bare.events(after: 1).makeAsyncIterator()
        try await bare.enqueue(CallOperation(kind: .noop))
        let events = await Self.take(2, from: &resumed)
        #expect(events.first?.kind.droppedEvents?.count == 2)
        #expect(events.last?.sequenceNumber == 4)
        try await bare.shutdown()

        let kept = try await Self.point(history: 10)
        for _ in 0..<2 { try await kept.enqueue(CallOperation(kind: .noop)) }
        var fromEarlierRun = kept.events(after: 9_000).makeAsyncIterator()
        let replayed = await Self.take(4, from: &fromEarlierRun)
        #expect(replayed.first?.kind.droppedEvents?.count == 0)
        #expect(replayed.first?.kind.droppedEvents?.namesEveryFinished == false)
        #expect(replayed.dropFirst().map(\.sequenceNumber) == [1, 2, 3])
        try await kept.shutdown()
    }

    @Test("S34: a stream that resumes while commits go on gets every later number once, in order")
    func resumeWhileCommitting() async throws {
        let point = try await Self.point(history: 10_000)
        var first = point.events().makeAsyncIterator()
        let producer = Task {
            for _ in 0..<300 { try await point.enqueue(CallOperation(kind: .noop)) }
        }
        let seen = await Self.take(50, from: &first)
        let lastSeen = try #require(seen.last?.sequenceNumber)
        var resumed = point.events(after: lastSeen).makeAsyncIterator()
        try await producer.value
        // The suspension is event 1, and each enqueue one more.
        let rest = await Self.take(Int(301 - lastSeen), from: &resumed)
        #expect(rest.map(\.sequenceNumber) == Array(lastSeen + 1...301))
        try await point.shutdown()
    }
}
