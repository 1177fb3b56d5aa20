import Benchmark
import Foundation
import Measuring
import Relay
import RelayTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// P6: Relay's HTTP calls against raw URLSession, on the same loopback server, paired within each iteration.
///
/// Each iteration runs Relay, URLSession, URLSession, Relay (see ``PairedMeasurement``), `count` GET requests each,
/// after an unmeasured round that opens the connections. Names carry the request count.
let benchmarks: @Sendable () -> Void = {
    let count = 1000
    let width = 8
    let paired = PairedMeasurement(
        first: "relayRequestsPerSecond",
        second: "sessionRequestsPerSecond",
        ratio: "relayPerMilleOfSession",
        ratioPolarity: .prefersLarger
    )
    let configuration = Benchmark.Configuration(
        metrics: paired.metrics,
        warmupIterations: 1,
        maxDuration: .seconds(60),
        maxIterations: 15
    )

    Benchmark(
        "P6 Relay bunch \(width) against URLSession TaskGroup width \(width) n=\(count)", configuration: configuration
    ) {
        benchmark in
        let times = try await onEveryCore {
            let server = try itemServer()
            defer { server.stop() }
            let url = server.url("/item")
            let session = URLSession(configuration: .default)
            defer { session.invalidateAndCancel() }
            let operations = { try (0..<count).map { _ in try CallOperation.http(HTTPCall(url: url)) } }
            return try await DataPoint.with(
                storage: .volatile, configuration: DataPoint.Configuration(retention: .zero)
            ) { point in
                try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: width))
                try await run(operations(), on: point)
                try await fetch(url, count: count, width: width, with: session)
                return try await PairedMeasurement.alternate {
                    let measured = try operations()
                    return try await timed { try await run(measured, on: point) }
                } second: {
                    try await timed { try await fetch(url, count: count, width: width, with: session) }
                }
            }
        }
        paired.record(times, count: count, in: benchmark)
    }
    downloadBenchmark()
}

/// A loopback server answering `/item` with a small JSON document.
func itemServer() throws -> LoopbackServer {
    let server = try LoopbackServer()
    server.setDefault("/item", .json(#"{"id":42,"name":"relay","tags":["http","benchmark"]}"#))
    return server
}

/// Enqueues the operations in one commit and awaits every outcome.
func run(_ operations: [CallOperation], on point: DataPoint) async throws {
    for handle in try await point.enqueue(operations) {
        // A benchmark that quietly stopped early would report a fiction; fail loudly instead.
        guard case .completed = try await handle.outcome else { fatalError("request \(handle.id) did not complete") }
    }
}

/// The baseline: `count` GET requests through raw URLSession, at most `width` at once in a task group.
func fetch(_ url: URL, count: Int, width: Int, with session: URLSession) async throws {
    try await runConcurrently(count, width: width) {
        let (_, response) = try await session.data(from: url)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { fatalError("\(url) did not answer 200") }
    }
}
