import Foundation
import Relay
import RelayTesting
import Synchronization
import Testing

/// The examples in the doc comments of executors, their context, events and queries, as they read there (see
/// `SnippetTests`).
@Suite("Doc comment examples: executors, events and queries", .timeLimit(.minutes(3)))
struct ExecutionDocCommentTests {
    struct Order: Model {
        let id: UUID
        var total: Int
    }

    struct Resize: CallExecutor {
        func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
            let image = try await render(operation.payload)
            return .completed(image)
        }
    }

    actor Client {
        func send(_ request: Data) async throws -> Data { request }
    }

    @Test("a DataPoint runs an executor of one's own, then shuts down")
    func dataPoint() async throws {
        try await DataPoint.with { point in
            point.register(ClosureExecutor { operation, _ in .completed(operation.payload) }, for: "echo")
            let echoed = try await point.execute(CallOperation(kind: "echo", payload: Data("hi".utf8)))
            #expect(echoed == Data("hi".utf8))
        }
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/summary", [.status(200, "three orders")])
        let operation = try CallOperation.http(HTTPCall(url: server.url("/summary")))
        let summary = try await DataPoint.with(storage: .volatile) { point in
            try await point.execute(operation)
        }
        #expect(summary == Data("three orders".utf8))
    }

    @Test("an executor renders, stages a model, and bounds a reply's wait")
    func executors() async throws {
        try await DataPoint.testing { point, _ in
            try point.register(Order.self, as: "orders")
            point.register(Resize(), for: "resize")
            point.register(ClosureExecutor { operation, _ in .completed(operation.payload) }, for: "echo")
            point.register(
                ClosureExecutor { operation, context in
                    let reply = operation.payload
                    let order = try JSONDecoder().decode(Order.self, from: reply)
                    try context.stage { tx in try tx.upsert(order) }
                    return .completed(reply)
                }, for: "save")
            let client = Client()
            point.register(
                ClosureExecutor { operation, context in
                    let request = operation.payload
                    let reply = try await context.withTimeout(.seconds(5)) { try await client.send(request) }
                    guard let reply else { return .retry(reason: "no reply within 5 seconds") }
                    return .completed(reply)
                }, for: "ask")
            let order = Order(id: UUID(), total: 9)
            #expect(try await point.execute(CallOperation(kind: "resize", payload: Data([1, 2]))) == Data([2, 1]))
            #expect(try await point.execute(CallOperation(kind: "echo", payload: Data("e".utf8))) == Data("e".utf8))
            _ = try await point.execute(CallOperation(kind: "save", payload: JSONEncoder().encode(order)))
            #expect(try point.model(Order.self, id: order.id)?.total == 9)
            #expect(try await point.execute(CallOperation(kind: "ask", payload: Data("q".utf8))) == Data("q".utf8))
        }
    }

    /// Registers "slow", whose attempts wait for `gate` and report an error before they complete.
    private static func registerSlow(on point: DataPoint, gate: Gate) {
        point.register(
            ClosureExecutor { operation, context in
                await gate.wait()
                context.report(AttemptReport(error: "slow"))
                return .completed(operation.payload)
            }, for: "slow")
    }

    @Test("an observer counts terminal events, and the finished operations a drop names")
    func droppedEvents() async throws {
        try await DataPoint.testing { point, _ in
            let gate = Gate()
            Self.registerSlow(on: point, gate: gate)
            gate.open()
            let operations = (0..<3).map { _ in CallOperation(kind: "slow") }
            let events = point.events()
            let handles = try await point.enqueue(operations)
            var remaining = Set(handles.map(\.id))
            for await event in events {
                if event.kind.isTerminal, let id = event.operationID { remaining.remove(id) }
                if let dropped = event.kind.droppedEvents {
                    remaining.subtract(dropped.finished)
                    if !dropped.namesEveryFinished {
                        // Too many to name: ask the DataPoint about the rest.
                        for id in remaining where try await point.status(of: id)?.state.isTerminal != false {
                            remaining.remove(id)
                        }
                    }
                }
                if remaining.isEmpty { break }
            }
            #expect(remaining.isEmpty)
        }
    }

    @Test("a client that comes back after the last event it saw gets the events after it")
    func resumedEvents() async throws {
        let point = try await DataPoint(
            storage: .volatile, configuration: DataPoint.Configuration(eventHistorySize: 100))
        try await point.suspend()
        _ = try await point.resume()
        let lastEventID: UInt64 = 1
        var sent: [UInt64] = []
        func send(_ event: CallEvent, id: UInt64) {
            sent.append(id)
            point.beginShutdown()
        }
        for await event in point.events(after: lastEventID) {
            send(event, id: event.sequenceNumber)
        }
        #expect(sent == [2])
    }

    @Test("an operation's events carry its attempts' reports")
    func attemptReports() async throws {
        try await DataPoint.testing { point, _ in
            let gate = Gate()
            Self.registerSlow(on: point, gate: gate)
            let handle = try await point.enqueue(CallOperation(kind: "slow"))
            let events = try point.events(for: handle.id)
            gate.open()
            var attempts: [Int] = []
            for await event in events {
                if let report = event.kind.report {
                    print(report.attempt, report.response?.status ?? 0, report.error ?? "")
                    attempts.append(report.attempt)
                }
                if event.kind.isTerminal { break }
            }
            #expect(attempts == [1])
        }
    }

    @Test("every event from the subscription on")
    func eventStream() async throws {
        try await DataPoint.testing { point, _ in
            let gate = Gate()
            Self.registerSlow(on: point, gate: gate)
            gate.open()
            let events = point.events()
            try await point.enqueue(CallOperation(kind: "slow"))
            var kinds: [String] = []
            for await event in events {
                print(event.sequenceNumber, event.kind)
                kinds.append(event.kind.name)
                if event.kind.isTerminal { break }
            }
            #expect(kinds.last == "completed")
        }
    }

    @Test("failed operations are listed page by page, replayed and purged")
    func queries() async throws {
        try await DataPoint.testing { point, _ in
            try await point.upsertCallSequence(CallSequence(name: "webhooks", bunchSize: 4))
            point.register(ClosureExecutor { _, _ in .failed(reason: "gone") }, for: "hook")
            let hooks = (0..<3).map { _ in CallOperation(kind: "hook", sequenceName: "webhooks") }
            try await point.enqueue(hooks)
            await point.settled()
            let failed = try point.operations(OperationQuery(states: [.failed], sequence: "webhooks"))
            #expect(failed.statuses.count == 3)
            var query = OperationQuery(states: [.failed, .cancelled], limit: 50)
            var listed = 0
            repeat {
                let page = try point.operations(query)
                for status in page.statuses { print(status.id, status.state) }
                listed += page.statuses.count
                query.after = page.next
            } while query.after != nil
            #expect(listed == 3)
            let page = try point.operations(OperationQuery(limit: 1))
            let text = page.next?.description  // "12.0"
            let cursor = text.flatMap(OperationPage.Cursor.init)
            #expect(cursor == page.next && cursor != nil)
            for status in try point.operations(OperationQuery(states: [.failed])).statuses {
                try await point.replay(status.id)
            }
            await point.settled()
            let deadLetters = try point.operations(.deadLetters(limit: 500))
            try await point.purge(deadLetters.statuses.map(\.id))
            try await point.purge(matching: OperationQuery(states: [.failed], sequence: "webhooks"))
            #expect(try point.operations(.deadLetters()).statuses.isEmpty)
        }
    }
}

/// The image, resized: here, its bytes reversed.
private func render(_ image: Data) async throws -> Data {
    Data(image.reversed())
}

final class Counting: CallObserver {
    let finishedCount = Mutex(0)

    func finished(_ operation: CallOperation, result: CallResult, metrics: CallMetrics) {
        finishedCount.withLock { $0 += 1 }
    }
}

@Suite("Observer doc comments")
struct ObserverDocCommentTests {
    @Test("an observer that counts finished operations")
    func counting() async throws {
        let counting = Counting()
        var configuration = DataPoint.Configuration.testing
        configuration.observers = [counting]
        try await DataPoint.with(storage: .volatile, configuration: configuration) { point in
            point.register(ClosureExecutor { _, _ in .completed(Data()) }, for: .noop)
            _ = try await point.execute(CallOperation(kind: .noop))
        }
        #expect(counting.finishedCount.withLock { $0 } == 1)
    }
}
