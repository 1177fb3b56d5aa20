import AsyncHTTPClient
import Benchmark
import Foundation
import Logging
import Measuring
import Metrics
import Relay
import RelayServer
import RelayTesting
import Tracing

/// The server benchmarks: P6a and P16.
///
/// P6a: Relay's HTTP calls through `AsyncHTTPClientTransport`, paired within each iteration with AsyncHTTPClient
/// alone at the same concurrency, and with Relay over URLSession, on the same loopback server. P16: the cost of the
/// logging, metrics and tracing observers.
let benchmarks: @Sendable () -> Void = {
    observerBenchmarks()
    let count = 1000
    let width = 8
    let configuration = { (paired: PairedMeasurement) in
        Benchmark.Configuration(
            metrics: paired.metrics, warmupIterations: 1, maxDuration: .seconds(60), maxIterations: 15)
    }
    let againstClient = PairedMeasurement(
        first: "relayRequestsPerSecond", second: "clientRequestsPerSecond", ratio: "relayPerMilleOfClient",
        ratioPolarity: .prefersLarger)
    Benchmark(
        "P6a Relay over AsyncHTTPClient bunch \(width) against AsyncHTTPClient TaskGroup width \(width) n=\(count)",
        configuration: configuration(againstClient)
    ) { benchmark in
        let times = try await onEveryCore {
            try await withServerAndClient { url, client in
                try await withPoint(transport: AsyncHTTPClientTransport(), width: width) { point in
                    try await run(url, count: count, on: point)
                    try await fetch(url, count: count, width: width, with: client)
                    return try await PairedMeasurement.alternate {
                        try await timed { try await run(url, count: count, on: point) }
                    } second: {
                        try await timed { try await fetch(url, count: count, width: width, with: client) }
                    }
                }
            }
        }
        againstClient.record(times, count: count, in: benchmark)
    }
    let againstSession = PairedMeasurement(
        first: "clientTransportRequestsPerSecond", second: "sessionTransportRequestsPerSecond",
        ratio: "clientTransportPerMilleOfSession", ratioPolarity: .prefersLarger)
    Benchmark(
        "P6a Relay over AsyncHTTPClient against Relay over URLSession bunch \(width) n=\(count)",
        configuration: configuration(againstSession)
    ) { benchmark in
        let times = try await onEveryCore {
            try await withServerAndClient { url, _ in
                try await withPoint(transport: AsyncHTTPClientTransport(), width: width) { overClient in
                    try await withPoint(transport: URLSessionTransport.shared, width: width) { overSession in
                        try await run(url, count: count, on: overClient)
                        try await run(url, count: count, on: overSession)
                        return try await PairedMeasurement.alternate {
                            try await timed { try await run(url, count: count, on: overClient) }
                        } second: {
                            try await timed { try await run(url, count: count, on: overSession) }
                        }
                    }
                }
            }
        }
        againstSession.record(times, count: count, in: benchmark)
    }
}

/// A loopback server answering `/item`, and an AsyncHTTPClient of the same configuration as the transport's.
private func withServerAndClient<Result: Sendable>(
    _ body: (URL, HTTPClient) async throws -> Result
) async throws -> Result {
    let server = try LoopbackServer()
    defer { server.stop() }
    server.setDefault("/item", .json(#"{"id":42,"name":"relay","tags":["http","benchmark"]}"#))
    var configuration = HTTPClient.Configuration()
    configuration.redirectConfiguration = .disallow
    let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    do {
        let result = try await body(server.url("/item"), client)
        try await client.shutdown()
        return result
    } catch {
        try? await client.shutdown()
        throw error
    }
}

/// A volatile DataPoint whose HTTP calls go through `transport`, with `width` of them at once.
private func withPoint<Result: Sendable>(
    transport: some HTTPTransport, width: Int, _ body: (DataPoint) async throws -> Result
) async throws -> Result {
    let result = try await DataPoint.with(
        storage: .volatile, configuration: DataPoint.Configuration(retention: .zero)
    ) { point in
        point.register(HTTPExecutor(transport: transport), for: .http)
        try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: width))
        return try await body(point)
    }
    if let owned = transport as? AsyncHTTPClientTransport { try await owned.shutdown() }
    return result
}

/// Enqueues `count` GETs of `url` in one commit and awaits every outcome.
private func run(_ url: URL, count: Int, on point: DataPoint) async throws {
    let operations = try (0..<count).map { _ in try CallOperation.http(HTTPCall(url: url)) }
    for handle in try await point.enqueue(operations) {
        guard case .completed = try await handle.outcome else { fatalError("request \(handle.id) did not complete") }
    }
}

/// The baseline: `count` GETs through AsyncHTTPClient, at most `width` at once in a task group.
private func fetch(_ url: URL, count: Int, width: Int, with client: HTTPClient) async throws {
    try await runConcurrently(count, width: width) {
        let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(60))
        guard response.status == .ok else { fatalError("\(url) did not answer 200") }
        _ = try await response.body.collect(upTo: 1 << 20)
    }
}

/// P16: P4's durable workload (operations through a file store under group commit, bunch 64) with `RelayLogging`,
/// `RelayMetrics` and `RelayTracing` writing to the libraries' no-op backends, paired in each iteration with the same
/// workload and no observer.
private func observerBenchmarks() {
    let count = 20_000
    let paired = PairedMeasurement(
        first: "observedOperationsPerSecond", second: "plainOperationsPerSecond", ratio: "observedPerMilleOfPlain",
        ratioPolarity: .prefersLarger)
    let observers: [any CallObserver] = [
        RelayLogging(logger: Logger(label: "relay") { _ in SwiftLogNoOpLogHandler() }),
        RelayMetrics(factory: NOOPMetricsHandler.instance),
        RelayTracing(tracer: NoOpTracer()),
    ]
    Benchmark(
        "P16 Relay file store with observers against without n=\(count)",
        // Twenty iterations: a round's fsyncs vary by a tenth and more from one iteration to the next.
        configuration: Benchmark.Configuration(
            metrics: paired.metrics, warmupIterations: 1, maxDuration: .seconds(60), maxIterations: 20)
    ) { benchmark in
        let times = try await onEveryCore {
            try await PairedMeasurement.alternate {
                try await durableRound(count, observers: observers)
            } second: {
                try await durableRound(count, observers: [])
            }
        }
        paired.record(times, count: count, in: benchmark)
    }
}

/// Enqueues `count` operations that do nothing in commits of 1,000, one commit after another, on a new file store, and
/// returns how long they took from the first enqueue to the last outcome: P4's round.
private func durableRound(_ count: Int, observers: [any CallObserver]) async throws -> Duration {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("relay-p16-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    var configuration = DataPoint.Configuration(retention: .zero)
    configuration.observers = observers
    return try await DataPoint.with(storage: .file(at: folder), configuration: configuration) { point in
        point.register(ClosureExecutor { _, _ in .completed(Data()) }, for: "noop")
        try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 64))
        let commits = (0..<count / 1000).map { _ in (0..<1000).map { _ in CallOperation(kind: "noop") } }
        return try await timed {
            var handles: [CallHandle] = []
            for commit in commits { handles += try await point.enqueue(commit) }
            for handle in handles {
                guard case .completed = try await handle.outcome else { fatalError("\(handle.id) did not complete") }
            }
        }
    }
}
