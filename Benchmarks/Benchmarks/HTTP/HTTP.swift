import Benchmark
import Foundation
import Relay
import RelayTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// P6: Relay's HTTP calls against raw URLSession, on the same loopback server, paired within each iteration.
///
/// The machine's speed drifts by more than the goal's margin over the seconds a benchmark takes, so two separate
/// benchmarks would compare two different machines. Each iteration instead runs Relay, URLSession, URLSession, Relay,
/// `count` GET requests each after an unmeasured round that opens the connections, and records both rates and their
/// ratio; the median ratio is the goal's. Names carry the request count.
let benchmarks: @Sendable () -> Void = {
    let count = 1000
    let width = 8
    let configuration = Benchmark.Configuration(
        metrics: [PairedRates.relay, PairedRates.session, PairedRates.ratio],
        warmupIterations: 1,
        maxDuration: .seconds(60),
        maxIterations: 15
    )

    Benchmark(
        "P6 Relay bunch \(width) against URLSession TaskGroup width \(width) n=\(count)", configuration: configuration
    ) {
        benchmark in
        let server = try itemServer()
        defer { server.stop() }
        let url = server.url("/item")
        let session = URLSession(configuration: .default)
        defer { session.invalidateAndCancel() }
        let operations = { try (0..<count).map { _ in try CallOperation.http(HTTPCall(url: url)) } }
        try await DataPoint.with(storage: .volatile, configuration: DataPoint.Configuration(retention: .zero)) {
            point in
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: width))
            try await run(operations(), on: point)
            try await fetch(url, count: count, width: width, with: session)
            var relay = Duration.zero
            var raw = Duration.zero
            let clock = ContinuousClock()
            // Relay, URLSession, URLSession, Relay: a drift that is steady over the iteration weighs on both sides alike.
            for relayTurn in [true, false, false, true] {
                let measured = relayTurn ? try operations() : []
                let started = clock.now
                if relayTurn {
                    try await run(measured, on: point)
                    relay += clock.now - started
                } else {
                    try await fetch(url, count: count, width: width, with: session)
                    raw += clock.now - started
                }
            }
            let relayRate = Double(2 * count) / relay.seconds
            let sessionRate = Double(2 * count) / raw.seconds
            benchmark.measurement(PairedRates.relay, Int(relayRate))
            benchmark.measurement(PairedRates.session, Int(sessionRate))
            benchmark.measurement(PairedRates.ratio, Int(1000 * relayRate / sessionRate))
        }
    }
}

/// The custom metrics of the P6 benchmark: requests per second of each side, and Relay's rate per thousand of the
/// baseline's in the same iteration.
enum PairedRates {
    static let relay = BenchmarkMetric.custom(
        "relayRequestsPerSecond", polarity: .prefersLarger, useScalingFactor: false)
    static let session = BenchmarkMetric.custom(
        "sessionRequestsPerSecond", polarity: .prefersLarger, useScalingFactor: false)
    static let ratio = BenchmarkMetric.custom(
        "relayPerMilleOfSession", polarity: .prefersLarger, useScalingFactor: false)
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
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
    try await withThrowingTaskGroup(of: Void.self) { group in
        var running = 0
        for _ in 0..<count {
            if running == width {
                try await group.next()
                running -= 1
            }
            group.addTask {
                let (_, response) = try await session.data(from: url)
                guard (response as? HTTPURLResponse)?.statusCode == 200 else { fatalError("\(url) did not answer 200") }
            }
            running += 1
        }
        try await group.waitForAll()
    }
}
