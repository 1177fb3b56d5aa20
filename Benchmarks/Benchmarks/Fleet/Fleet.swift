import Benchmark
import Foundation
import Measuring
import PostgresNIO
import Relay
import RelayPostgres

/// The fleet's benchmarks: P13, P14 and P15.
///
/// They run on the PostgreSQL server that `RELAY_POSTGRES_URL` names (`postgres://USER@HOST:PORT/DB`), each iteration
/// in a database of its own. Without the variable they register nothing, and `compare.sh` prints their lines as not
/// run; P15 also needs `RELAY_FLEET_WORKER`, the path of the Integrations package's `RelayPostgresWorker`, which
/// `compare.sh` builds.
///
/// P13: durable no-op operations through one DataPoint on the fleet's store, bunch 64, from enqueue to completion,
/// paired within each iteration with a queue written directly over postgres-nio, the common pattern: eight workers,
/// each claiming one row with `FOR UPDATE SKIP LOCKED` and completing it in one transaction. P14: the time from an
/// enqueue in one DataPoint to its handle's result, the operation run by another DataPoint of the same database,
/// with `LISTEN` and with polling alone. P15: the time from the SIGKILL of a process that holds 1,000 claimed
/// operations, under leases of 5 seconds, until two other processes have run them all.
let benchmarks: @Sendable () -> Void = {
    guard let server = FleetServer() else { return }
    let count = 5000
    let againstSQL = PairedMeasurement(
        first: "relayOperationsPerSecond", second: "sqlQueueOperationsPerSecond", ratio: "relayPerMilleOfSQLQueue",
        ratioPolarity: .prefersLarger)
    Benchmark(
        "P13 Relay fleet bunch 64 against a one-row-per-transaction SQL queue n=\(count)",
        configuration: .init(
            metrics: againstSQL.metrics, warmupIterations: 1, maxDuration: .seconds(120), maxIterations: 5)
    ) { benchmark in
        let times = try await onEveryCore {
            try await server.withDatabase { client in
                try await FleetWorkload.withPoint(client) { point in
                    try await SQLQueue.create(on: client)
                    return try await PairedMeasurement.alternate {
                        try await timed { try await FleetWorkload.run(count, on: point) }
                    } second: {
                        try await SQLQueue.run(count, workers: 8, on: client)
                    }
                }
            }
        }
        againstSQL.record(times, count: count, in: benchmark)
    }
    let latency = BenchmarkMetric.custom(
        "p99EnqueueToResultMicroseconds", polarity: .prefersSmaller, useScalingFactor: false)
    let median = BenchmarkMetric.custom(
        "p50EnqueueToResultMicroseconds", polarity: .prefersSmaller, useScalingFactor: false)
    for listens in [true, false] {
        Benchmark(
            "P14 Relay fleet enqueue to result across processes \(listens ? "LISTEN" : "polling 10 ms") n=200",
            configuration: .init(
                metrics: [latency, median], warmupIterations: 1, maxDuration: .seconds(60), maxIterations: 5)
        ) { benchmark in
            let samples = try await onEveryCore {
                try await server.withDatabase { client, database in
                    try await FleetWorkload.acrossProcesses(
                        200, listens: listens, on: client, other: { try await server.withClient(database, $0) })
                }
            }.sorted()
            benchmark.measurement(latency, Int(samples[samples.count * 99 / 100].seconds * 1e6))
            benchmark.measurement(median, Int(samples[samples.count / 2].seconds * 1e6))
        }
    }
    guard let worker = ProcessInfo.processInfo.environment["RELAY_FLEET_WORKER"] else { return }
    let recovery = BenchmarkMetric.custom(
        "killToAllFinishedMilliseconds", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark(
        "P15 Relay fleet SIGKILL of a process holding 1000 claims lease 5 s",
        configuration: .init(metrics: [recovery], warmupIterations: 0, maxDuration: .seconds(120), maxIterations: 3)
    ) { benchmark in
        let time = try await onEveryCore {
            try await server.withDatabase { client, database in
                try await FleetWorkload.recovery(
                    of: 1000, killing: URL(fileURLWithPath: worker), lease: 5, server: server, database: database,
                    on: client)
            }
        }
        benchmark.measurement(recovery, Int(time.seconds * 1000))
    }
}
