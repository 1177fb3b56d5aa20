import Foundation
import Relay
import RelayTesting
import Testing

@Suite("S13 events", .timeLimit(.minutes(3)))
struct EventTests {
    @Test("S13: events have strictly increasing sequence numbers")
    func sequenceNumbersIncrease() async throws {
        try await withManualPoint { point, _ in
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
            let stream = point.events()
            let handles = try await point.enqueue((0..<500).map { _ in CallOperation(kind: .noop) })
            for handle in handles { _ = try await handle.value }
            var numbers: [UInt64] = []
            for await event in stream {
                numbers.append(event.sequenceNumber)
                if numbers.count == 1500 { break }
            }
            #expect(numbers.count == 1500)
            #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 })
        }
    }

    @Test("S13: a subscriber reading while transitions arrive gets every event once, numbered without gaps")
    func concurrentReadingLosesNothing() async throws {
        try await withManualPoint { point, _ in
            try await point.suspend()
            let stream = point.events()
            let commits = 40
            let perCommit = 250
            try await withThrowingTaskGroup(of: [UUID].self) { group in
                group.addTask {
                    var ids: [UUID] = []
                    for _ in 0..<commits {
                        ids += try await point.enqueue((0..<perCommit).map { _ in CallOperation(kind: .noop) }).map(
                            \.id)
                    }
                    return ids
                }
                var received: [CallEvent] = []
                for await event in stream {
                    received.append(event)
                    if received.count == commits * perCommit { break }
                }
                let enqueued = try await group.next() ?? []
                #expect(received.map(\.operationID) == enqueued)
                #expect(zip(received, received.dropFirst()).allSatisfy { $0.sequenceNumber + 1 == $1.sequenceNumber })
            }
        }
    }

    @Test("S13: every event kind reaches a subscriber")
    func everyKind() async throws {
        try await withManualPoint { point, clock in
            point.register(ClosureExecutor { _, _ in .skipped }, for: "skips")
            point.register(ClosureExecutor { _, _ in .failed(reason: "no") }, for: "fails")
            point.register(
                ClosureExecutor { _, context in
                    guard context.attempt > 1 else {
                        context.report(AttemptReport(error: "again"))
                        return .retry(reason: "again")
                    }
                    return .completed(Data())
                },
                for: "retries"
            )
            let stream = point.events()
            try await point.suspend(reason: "setup")
            let completed = try await point.enqueue(CallOperation(kind: .noop))
            let skipped = try await point.enqueue(CallOperation(kind: "skips"))
            let failed = try await point.enqueue(CallOperation(kind: "fails"))
            let retried = try await point.enqueue(
                CallOperation(kind: "retries", retryPolicy: RetryPolicy(initialDelay: .seconds(1), jitter: .none))
            )
            let cancelled = try await point.enqueue(CallOperation(kind: .noop))
            try await point.hold(completed.id, until: point.now)
            try await point.cancel(cancelled.id)
            try await point.resume(reason: "go")
            for handle in [completed, skipped, failed] { _ = try await handle.outcome }
            try await point.idle()
            clock.advance(by: .seconds(1))
            _ = try await retried.value
            var seen: Set<String> = []
            for await event in stream {
                seen.insert(event.kind.name)
                if seen.count == 11 { break }
            }
            #expect(
                seen == [
                    "enqueued", "started", "attemptEnded", "completed", "skipped", "retryScheduled", "failed",
                    "cancelled", "held",
                    "suspended", "resumed",
                ]
            )
        }
    }

    @Test("S13: a slow subscriber gets a dropped count, never an unbounded buffer")
    func slowSubscriberDrops() async throws {
        try await withManualPoint { point, _ in
            try await point.suspend()
            let stream = point.events(bufferSize: 10)
            let handles = try await point.enqueue((0..<100).map { _ in CallOperation(kind: .noop) })
            var received: [CallEvent] = []
            for await event in stream {
                received.append(event)
                if received.count == 11 { break }
            }
            #expect(received.first?.kind == .dropped(DroppedEvents(count: 90)))
            #expect(received.dropFirst().map(\.operationID) == handles.suffix(10).map(\.id))
            #expect(zip(received, received.dropFirst()).allSatisfy { $0.sequenceNumber < $1.sequenceNumber })
            #expect(point.metrics().droppedEvents == 90)
        }
    }

    @Test("S13: drops that span several transitions keep the newest events, in order, after one dropped count")
    func dropsAcrossTransitions() async throws {
        try await withManualPoint { point, _ in
            try await point.suspend()
            let stream = point.events(bufferSize: 10)
            var handles: [CallHandle] = []
            for _ in 0..<7 {
                handles += try await point.enqueue((0..<3).map { _ in CallOperation(kind: .noop) })
            }
            var received: [CallEvent] = []
            for await event in stream {
                received.append(event)
                if received.count == 11 { break }
            }
            #expect(received.first?.kind == .dropped(DroppedEvents(count: 11)))
            #expect(received.first?.sequenceNumber == received.dropFirst().first.map { $0.sequenceNumber - 1 })
            #expect(received.dropFirst().map(\.operationID) == handles.suffix(10).map(\.id))
            #expect(point.metrics().droppedEvents == 11)
        }
    }

    @Test("S13: an observer counting terminal events finishes after drops: the dropped notice names what finished")
    func droppedNoticeNamesFinishedOperations() async throws {
        try await withManualPoint { point, _ in
            let stream = point.events(bufferSize: 10)
            let handles = try await point.enqueue((0..<100).map { _ in CallOperation(kind: .noop) })
            for handle in handles { _ = try await handle.value }
            // The observer reads only now, its buffer long overrun; it counts as the DroppedEvents docs show.
            var remaining = Set(handles.map(\.id))
            var named = 0
            for await event in stream {
                if event.kind.isTerminal, let id = event.operationID { remaining.remove(id) }
                if case .dropped(let dropped) = event.kind.value {
                    #expect(dropped.namesEveryFinished)
                    named += dropped.finished.count
                    remaining.subtract(dropped.finished)
                }
                if remaining.isEmpty { break }
            }
            #expect(remaining.isEmpty)
            #expect(named > 0)
        }
    }

    @Test("S13: events(for:) follows one operation and ends after its terminal event")
    func perOperationStream() async throws {
        try await withManualPoint { point, _ in
            try await point.suspend()
            let handle = try await point.enqueue(CallOperation(kind: .echo))
            _ = try await point.enqueue(CallOperation(kind: .noop))
            let stream = try point.events(for: handle.id)
            try await point.resume()
            var kinds: [CallEvent.Kind] = []
            for await event in stream {
                #expect(event.operationID == handle.id)
                kinds.append(event.kind)
            }
            #expect(kinds.count == 2)
            #expect(kinds.first == .started(attempt: 1))
            if case .completed(let metrics) = kinds.last?.value {
                #expect(metrics.attempts == 1)
            } else {
                Issue.record("expected completion, got \(kinds)")
            }
            // A finished operation's stream ends at once; an unknown one is a typed error.
            for await _ in try point.events(for: handle.id) { Issue.record("no events expected") }
            #expect(throws: RelayError.self) { try point.events(for: UUID()) }
        }
    }

    @Test("S13: every stream ends when the DataPoint shuts down")
    func streamsEndAtShutdown() async throws {
        let clock = ManualClock()
        let point = try await DataPoint(storage: .volatile, clock: clock, configuration: testConfiguration)
        let stream = point.events()
        try await point.shutdown()
        var count = 0
        for await _ in stream { count += 1 }
        #expect(count == 0)
    }

    @Test("S13: cancelling the iterating task ends the stream")
    func cancellationEndsIteration() async throws {
        try await withManualPoint { point, _ in
            let stream = point.events()
            let consumer = Task {
                var count = 0
                for await _ in stream { count += 1 }
                return count
            }
            consumer.cancel()
            #expect(await consumer.value == 0)
        }
    }

    @Test("S13/S15: event and metrics streams end as a graceful shutdown begins, while an operation still runs")
    func streamsEndWhenStopping() async throws {
        let gate = Gate()
        let clock = ManualClock()
        // A grace period that the manual clock never reaches: the DataPoint stays stopping while the operation runs.
        let configuration = DataPoint.Configuration(shutdownGracePeriod: .seconds(100))
        let point = try await DataPoint(storage: .volatile, clock: clock, configuration: configuration)
        point.registerGated(gate)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await point.run() }
            let everything = point.events()
            let handle = try await point.enqueue(CallOperation(kind: .gated))
            let following = try handle.events()
            let metrics = point.metrics(every: .seconds(1))
            await gate.waitForArrivals(1)

            point.beginShutdown()
            for await _ in everything {}
            for await _ in following {}
            // The metrics stream sleeps until its next snapshot is due, beside the timer loop's sleep.
            async let metricsEnded: Void = { for await _ in metrics {} }()
            await clock.waitForSleepers(2)
            clock.advance(by: .seconds(1))
            await metricsEnded
            // The streams ended with the operation still running, inside the grace period.
            #expect(try await point.status(of: handle.id)?.state == .running(attempt: 1))
            gate.open()
            try await group.waitForAll()
            #expect(try await handle.outcome == .completed(Data()))
        }
    }
}
