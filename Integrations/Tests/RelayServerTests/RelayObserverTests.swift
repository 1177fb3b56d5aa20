import Foundation
import InMemoryLogging
import InMemoryTracing
import Logging
import MetricsTestKit
import Relay
import RelayServer
import RelayTesting
import Testing
import Tracing

@Suite("S33 logs, metrics and traces", .timeLimit(.minutes(1)))
struct RelayObserverTests {
    /// Runs `body` with a DataPoint whose observers are `observers`.
    private func running(
        _ observers: [any CallObserver], _ body: (DataPoint) async throws -> Void
    ) async throws {
        var configuration = DataPoint.Configuration.testing
        configuration.observers = observers
        try await DataPoint.with(storage: .volatile, configuration: configuration) { point in
            try await body(point)
        }
    }

    @Test("S33: each attempt is a span in the enqueuer's trace, and its context goes out on the attempt's requests")
    func attemptsAreSpans() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/hooks", [.retryAfter("0"), .status(201)])
        let tracer = InMemoryTracer()
        try await running([RelayTracing(tracer: tracer)]) { point in
            let request = tracer.startSpan("POST /orders")
            let handle = try await ServiceContext.withValue(request.context) {
                try await point.enqueue(.http(HTTPCall(method: .post, url: server.url("/hooks"))))
            }
            _ = try await handle.value
            request.end()
        }
        let spans = tracer.finishedSpans
        let request = try #require(spans.first { $0.operationName == "POST /orders" })
        let attempts = spans.filter { $0.operationName == "relay.attempt http" }
        #expect(attempts.count == 2)
        for (number, attempt) in attempts.enumerated() {
            #expect(attempt.traceID == request.traceID)
            #expect(attempt.parentSpanID == request.spanID)
            #expect(attempt.kind == .consumer)
            #expect(attempt.attributes["relay.attempt"]?.toSpanAttribute() == .int64(Int64(number + 1)))
            #expect(attempt.attributes["relay.sequence"]?.toSpanAttribute() == .string("data"))
        }
        #expect(attempts.first?.status?.code == .error, "the first attempt asked for a retry")
        #expect(attempts.last?.status == nil)
        let sent = server.requests(to: "/hooks")
        #expect(sent.map { $0.header(InMemoryTracer.spanIDKey) } == attempts.map(\.spanID))
        #expect(sent.allSatisfy { $0.header(InMemoryTracer.traceIDKey) == request.traceID })
    }

    @Test("S33: logs carry the operation's metadata; a failure logs at error, and no payload is logged")
    func logsCarryMetadata() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "relay") { _ in handler }
        logger.logLevel = .trace
        try await running([RelayLogging(logger: logger)]) { point in
            point.register(ClosureExecutor { _, _ in .failed(reason: "no stock") }, for: "reserve")
            let operation = CallOperation(kind: "reserve", payload: Data("secret-payload".utf8))
            _ = try await point.enqueue(operation).outcome
            let id = operation.id.uuidString.lowercased()
            let entries = handler.entries
            // The enqueue is logged from the enqueuing task, which the worker may outrun.
            #expect(entries.map(\.level).sorted() == [.trace, .trace, .warning, .error])
            let finished = try #require(entries.first { $0.level == .error })
            #expect("\(finished.message)" == "finished: failed: no stock (after 1 attempt)")
            #expect(finished.metadata["relay.operation.id"] == "\(id)")
            #expect(finished.metadata["relay.operation.kind"] == "reserve")
            #expect(finished.metadata["relay.sequence"] == "data")
            #expect(finished.metadata["relay.attempt"] == "1")
            #expect(entries.allSatisfy { !"\($0.message)".contains("secret-payload") })
        }
    }

    @Test("S33: metrics count operations by kind, sequence and outcome, and time their waits and runs")
    func metricsCount() async throws {
        let metrics = TestMetrics()
        try await running([RelayMetrics(factory: metrics)]) { point in
            point.register(ClosureExecutor { _, _ in .completed(Data()) }, for: "ping")
            _ = try await point.execute(CallOperation(kind: "ping"))
        }
        let dimensions = [("kind", "ping"), ("sequence", "data")]
        #expect(try metrics.expectCounter("relay_operations_enqueued_total", dimensions).totalValue == 1)
        #expect(
            try metrics.expectCounter("relay_attempts_total", dimensions + [("ending", "completed")]).totalValue == 1)
        #expect(
            try metrics.expectCounter("relay_operations_finished_total", dimensions + [("outcome", "completed")])
                .totalValue == 1)
        #expect(try metrics.expectMeter("relay_attempts_in_flight", dimensions).values == [1, 0])
        #expect(try metrics.expectTimer("relay_operation_run_duration", dimensions).values.count == 1)
        #expect(try metrics.expectTimer("relay_operation_queue_duration", dimensions).values.count == 1)
    }
}
