import Foundation
import Measuring
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting

/// Relay's side of the fleet's benchmarks.
enum FleetWorkload {
    static let noop = CallKind(rawValue: "noop")
    static let sequence = CallSequence.Name(rawValue: "bench")

    /// The store's options: polling as a backstop only, unless `listens` is off.
    static func options(listens: Bool = true) -> PostgresFleetStorage.Options {
        var options = PostgresFleetStorage.Options()
        options.listens = listens
        options.pollInterval = listens ? .seconds(1) : .milliseconds(10)
        return options
    }

    /// Runs `body` with a DataPoint on the fleet's store of `client` that runs no-op operations at bunch 64.
    static func withPoint<Result: Sendable>(
        _ client: PostgresClient, options: PostgresFleetStorage.Options = options(), executes: Bool = true,
        _ body: @Sendable (DataPoint) async throws -> Result
    ) async throws -> Result {
        let executors: [CallKind: any CallExecutor] =
            executes ? [noop: ClosureExecutor { _, _ in .completed(Data()) }] : [:]
        return try await DataPoint.with(
            storage: PostgresFleetStorage(client: client, options: options), executors: executors
        ) { point in
            if executes { try await point.upsertCallSequence(CallSequence(name: sequence, bunchSize: 64)) }
            return try await body(point)
        }
    }

    /// Enqueues `count` no-op operations in commits of 100 and awaits every one's outcome.
    static func run(_ count: Int, on point: DataPoint) async throws {
        var handles: [CallHandle] = []
        handles.reserveCapacity(count)
        for start in stride(from: 0, to: count, by: 100) {
            handles += try await point.enqueue(
                (start..<min(start + 100, count)).map { _ in CallOperation(kind: noop, sequenceName: sequence) })
        }
        for handle in handles { _ = try await handle.outcome }
    }

    /// The times from enqueue to result of `count` operations enqueued one at a time by a DataPoint that runs nothing,
    /// each run by a DataPoint of another client of the same database, as another process would.
    static func acrossProcesses(
        _ count: Int, listens: Bool, on client: PostgresClient,
        other: (@Sendable (PostgresClient) async throws -> [Duration]) async throws -> [Duration]
    ) async throws -> [Duration] {
        try await other { runner in
            try await withPoint(runner, options: options(listens: listens)) { _ in
                try await withPoint(client, options: options(listens: listens), executes: false) { point in
                    // Registered by the other DataPoint, which has committed it before its body began.
                    let clock = ContinuousClock()
                    var samples: [Duration] = []
                    for _ in 0..<(count + 20) {
                        let started = clock.now
                        _ = try await point.execute(CallOperation(kind: noop, sequenceName: sequence))
                        samples.append(clock.now - started)
                    }
                    return Array(samples.dropFirst(20))
                }
            }
        }
    }

    /// The time from the SIGKILL of `worker`, once it has started `count` operations of sequence `orders` that never
    /// end, under leases of `lease` seconds, until two DataPoints of other clients have run them all.
    ///
    /// The two run with the same lease, as every process of one fleet is configured alike: each looks for expired
    /// leases every third of its own.
    static func recovery(
        of count: Int, killing worker: URL, lease: Int, server: FleetServer, database: String,
        on client: PostgresClient
    ) async throws -> Duration {
        let orders = CallSequence.Name(rawValue: "orders")
        let child = try ChildProcess(
            executable: worker,
            arguments: ["claim", server.host, String(server.port), server.username, database, String(lease)])
        guard await child.readLines(until: { $0.contains("ready") }).contains("ready") else {
            throw FleetServerError(description: "the worker did not start")
        }
        let work: [CallKind: any CallExecutor] = ["work": ClosureExecutor { _, _ in .completed(Data()) }]
        var options = PostgresFleetStorage.Options()
        options.lease = .seconds(lease)
        return try await server.withClient(database) { [options] other in
            try await DataPoint.with(
                storage: PostgresFleetStorage(client: other, options: options), executors: work
            ) { second in
                try await DataPoint.with(
                    storage: PostgresFleetStorage(client: client, options: options), executors: work
                ) { first in
                    var handles: [CallHandle] = []
                    for start in stride(from: 0, to: count, by: 100) {
                        handles += try await first.enqueue(
                            (start..<min(start + 100, count)).map { _ in
                                CallOperation(kind: "work", sequenceName: orders)
                            })
                    }
                    _ = await child.readLines { lines in lines.count { $0.hasPrefix("started ") } >= count }
                    let clock = ContinuousClock()
                    let killed = clock.now
                    await child.kill()
                    // Only now do the other processes run the sequence: what they run, they reclaimed.
                    try await first.upsertCallSequence(CallSequence(name: orders, bunchSize: 64))
                    try await second.upsertCallSequence(CallSequence(name: orders, bunchSize: 64))
                    for handle in handles { _ = try await handle.outcome }
                    return clock.now - killed
                }
            }
        }
    }
}
