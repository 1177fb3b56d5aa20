import Foundation
import RelayTesting
import Synchronization
import Testing

@testable import Relay

/// An observer that notes every hook, keeps a trace id from the enqueuing task, and runs attempts with it.
private final class TracingObserver: CallObserver {
    @TaskLocal static var traceID: String?

    private let notes = Mutex<[String]>([])

    var seen: [String] { notes.withLock { $0 } }

    private func note(_ text: String) {
        notes.withLock { $0.append(text) }
    }

    func carrier(for operation: CallOperation) -> [String: String] {
        Self.traceID.map { ["trace": $0] } ?? [:]
    }

    func enqueued(_ operations: [CallOperation]) {
        note("enqueued \(operations.count)")
    }

    func claimed(_ operation: CallOperation, attempt: Int) {
        note("claimed \(attempt)")
    }

    func attempt<Result: Sendable>(
        _ operation: CallOperation, number: Int, _ body: () async -> Result
    ) async -> Result {
        await Self.$traceID.withValue(operation.carrier["trace"]) { await body() }
    }

    func attemptEnded(_ operation: CallOperation, number: Int, ending: AttemptEnding) {
        note("ended \(number): \(ending.outcome.map { "\($0)" } ?? "threw")")
    }

    func finished(_ operation: CallOperation, result: CallResult, metrics: CallMetrics) {
        note("finished \(result) after \(metrics.attempts)")
    }
}

/// Registers `traced`, which fails its first attempt and returns the trace id its attempts run with.
private func registerTraced(on point: DataPoint) {
    point.register(
        ClosureExecutor { _, context in
            guard context.attempt > 1 else { return .retry(after: .zero, reason: "once more") }
            return .completed(Data((TracingObserver.traceID ?? "none").utf8))
        }, for: "traced")
}

@Suite("S33 observers", .timeLimit(.minutes(3)))
struct ObserverTests {
    @Test(
        "S33: observers hear of each enqueue, claim, attempt and finish, in order, and attempts run in the enqueuer's trace"
    )
    func hooksInOrder() async throws {
        let observer = TracingObserver()
        var configuration = testConfiguration
        configuration.observers = [observer]
        try await withManualPoint(configuration: configuration) { point, _ in
            registerTraced(on: point)
            let handle = try await TracingObserver.$traceID.withValue("abc") {
                try await point.enqueue(CallOperation(kind: "traced"))
            }
            #expect(try await handle.value == Data("abc".utf8), "the executor ran in the enqueuer's trace")
            #expect(handle.record.operation.carrier == ["trace": "abc"])
            await point.waitUntilIdle()
            // enqueued comes from the enqueuing task, once the commit is durable: a worker may be quicker.
            #expect(observer.seen.filter { $0.hasPrefix("enqueued") } == ["enqueued 1"])
            #expect(
                observer.seen.filter { !$0.hasPrefix("enqueued") } == [
                    "claimed 1", "ended 1: retry after 0 ns: once more", "claimed 2", "ended 2: completed (3 B)",
                    "finished completed (3 B) after 2",
                ])
        }
    }

    @Test("S33: the carrier is stored with the operation: a restored operation runs in its enqueuer's trace")
    func carrierSurvivesRestart() async throws {
        try await withTemporaryFolder { folder in
            var configuration = DataPoint.Configuration()
            configuration.observers = [TracingObserver()]
            let operation = CallOperation(kind: "traced")
            let point = try await DataPoint(storage: .file(at: folder.url), configuration: configuration)
            registerTraced(on: point)
            try await point.suspend()
            try await TracingObserver.$traceID.withValue("kept") { _ = try await point.enqueue(operation) }
            // Named again from another trace, it is the same operation.
            try await TracingObserver.$traceID.withValue("other") { _ = try await point.enqueue(operation) }
            try await point.shutdown()

            try await DataPoint.with(storage: .file(at: folder.url), configuration: configuration) { point in
                registerTraced(on: point)
                _ = try await point.resume()
                let handle = try await point.handle(for: operation.id)
                #expect(try await handle.value == Data("kept".utf8))
                #expect(handle.record.operation.carrier == ["trace": "kept"])
            }
        }
    }
}

/// An observer that propagates the operation's trace as a header of the attempt's requests.
private struct PropagatingObserver: CallObserver {
    func carrier(for operation: CallOperation) -> [String: String] {
        ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"]
    }

    func attempt<Result: Sendable>(
        _ operation: CallOperation, number: Int, _ body: () async -> Result
    ) async -> Result {
        let headers = ["traceparent": operation.carrier["traceparent"] ?? ""]
        return await PropagatedHeaders.$current.withValue(headers) { await body() }
    }
}

@Suite("S33 propagated headers", .timeLimit(.minutes(3)))
struct PropagatedHeaderTests {
    @Test("S33: an observer's propagated headers go out on every request of the attempt, but not over the call's own")
    func headersGoOut() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/a", [.status(201)])
        server.script("/b", [.status(201)])
        var configuration = DataPoint.Configuration.testing
        configuration.observers = [PropagatingObserver()]
        try await DataPoint.with(storage: .volatile, configuration: configuration) { point in
            _ = try await point.execute(HTTPCall(method: .post, url: server.url("/a")))
            _ = try await point.execute(
                HTTPCall(method: .post, url: server.url("/b"), headers: ["traceparent": "mine"]))
        }
        #expect(server.requests(to: "/a").first?.header("traceparent")?.hasPrefix("00-4bf92f35") == true)
        #expect(server.requests(to: "/b").first?.header("traceparent") == "mine")
    }
}
