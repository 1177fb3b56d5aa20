import Benchmark
import Foundation
import Measuring
import Relay
import Synchronization

/// A model of the benchmarks.
struct Item: Model {
    let id: Int
    var name: String
    var note: String
}

/// A model of about 200 bytes encoded; its note is built once, so that the benchmarks time the document, not the
/// building of models.
func item(_ id: Int) -> Item {
    Item(id: id, name: "item \(id)", note: itemNote)
}

private let itemNote = String(repeating: "n", count: 150)

/// The document's goals, each beside its baseline in the same run.
///
/// Names carry the count per iteration.
let benchmarks: @Sendable () -> Void = {
    // P8: volatile transactions of one model upsert, against the same upsert (the model encoded to JSON and stored by
    // id) in a Dictionary behind a Mutex, paired in each iteration.
    let upserts = PairedMeasurement(
        first: "relayTransactionsPerSecond", second: "dictionaryUpsertsPerSecond", ratio: "relayPerMilleOfDictionary",
        ratioPolarity: .prefersLarger)
    let count = 20_000
    Benchmark(
        "P8 Relay transactions of one upsert against Dictionary behind Mutex n=\(count)",
        configuration: .init(
            metrics: upserts.metrics, warmupIterations: 1, maxDuration: .seconds(20), maxIterations: 10)
    ) { benchmark in
        let times = try await onEveryCore {
            try await DataPoint.with(storage: .volatile) { point in
                try point.register(Item.self, as: "items")
                let store = Mutex<[String: Data]>([:])
                return try await PairedMeasurement.alternate {
                    try await timed {
                        for id in 0..<count { try await point.transaction { tx in try tx.upsert(item(id)) } }
                    }
                } second: {
                    try await timed {
                        for id in 0..<count {
                            let encoded = try JSONEncoder().encode(item(id))
                            store.withLock { $0["\(id)"] = encoded }
                        }
                    }
                }
            }
        }
        upserts.record(times, count: count, in: benchmark)
    }

    // P11: resolving an alias, and a one-to-many relation of ten, in nanoseconds each, read again as a service or a
    // screen reads them (the document keeps what reads decoded); beside them, a Dictionary lookup of the same model,
    // decoded, and for context the relation resolved cold, after each change to its collection.
    let aliasCost = BenchmarkMetric.custom("aliasNanoseconds", polarity: .prefersSmaller, useScalingFactor: false)
    let relationCost = BenchmarkMetric.custom("relationNanoseconds", polarity: .prefersSmaller, useScalingFactor: false)
    let coldCost = BenchmarkMetric.custom("coldRelationNanoseconds", polarity: .prefersSmaller, useScalingFactor: false)
    let lookupCost = BenchmarkMetric.custom("dictionaryNanoseconds", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark(
        "P11 Relay alias and relation against Dictionary lookup n=100000",
        configuration: .init(
            metrics: [aliasCost, relationCost, coldCost, lookupCost], warmupIterations: 1, maxDuration: .seconds(20),
            maxIterations: 10)
    ) { benchmark in
        let resolutions = 100_000
        let colds = 1_000
        let (alias, relation, cold, lookup) = try await DataPoint.with(storage: .volatile) { point in
            try point.register(Item.self, as: "items")
            let owner = item(-1)
            try await point.transaction { tx in
                try tx.upsert(owner)
                for id in 0..<10_000 { try tx.upsert(item(id)) }
                for id in 0..<10 { try tx.relate(owner, .owns, item(id)) }
            }
            let target = AliasOf<Item>(id: 5_000)
            let aliasTime = try timedSync { for _ in 0..<resolutions { blackHole(try point.resolve(target)) } }
            let relationTime = try timedSync {
                for _ in 0..<(resolutions / 10) { blackHole(try point.related(to: owner, by: .owns, as: Item.self)) }
            }
            var coldTime = Duration.zero
            for id in 0..<colds {
                try await point.transaction { tx in try tx.upsert(item(10_000 + id)) }
                coldTime += try timedSync { blackHole(try point.related(to: owner, by: .owns, as: Item.self)) }
            }
            let plain = Dictionary(uniqueKeysWithValues: (0..<10_000).map { ($0, item($0)) })
            let lookupTime = timedSync { for _ in 0..<resolutions { blackHole(plain[5_000]) } }
            return (aliasTime, relationTime, coldTime, lookupTime)
        }
        benchmark.measurement(aliasCost, Int(alias.seconds * 1e9 / Double(resolutions)))
        benchmark.measurement(relationCost, Int(relation.seconds * 1e9 / Double(resolutions / 10)))
        benchmark.measurement(coldCost, Int(cold.seconds * 1e9 / Double(colds)))
        benchmark.measurement(lookupCost, Int(lookup.seconds * 1e9 / Double(resolutions)))
    }

    // P12: changes delivered to one subscriber while transactions of 100 changes commit one after another, from the
    // first commit to the subscriber's last change. As in P7, the producer makes changes as fast as the engine takes
    // them: it removes models (set up beforehand), so that the rate measured is the commit and the delivery, not the
    // encoding of models, which P8 measures. Beside it, for context, the same with upserts.
    let changes = 100_000
    for removing in [true, false] {
        Benchmark(
            "P12 Relay changes to one subscriber from \(removing ? "removals" : "upserts") n=\(changes)",
            configuration: .init(
                metrics: [operationsPerSecond], warmupIterations: 1, maxDuration: .seconds(20), maxIterations: 10)
        ) { benchmark in
            try await benchmark.measureRate(count: changes) {
                try await DataPoint.with(storage: .volatile, configuration: .init(eventBufferSize: 1 << 20)) { point in
                    try point.register(Item.self, as: "items")
                    let models = (0..<changes).map(item)
                    if removing {
                        try await point.transaction { tx in for model in models { try tx.upsert(model) } }
                    }
                    let stream = try point.changes(of: Item.self)
                    return try await timed {
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask {
                                var seen = 0
                                for await _ in stream {
                                    seen += 1
                                    if seen == changes { break }
                                }
                            }
                            for start in stride(from: 0, to: changes, by: 100) {
                                try await point.transaction { tx in
                                    for model in models[start..<start + 100] {
                                        if removing {
                                            try tx.remove(Item.self, id: model.id)
                                        } else {
                                            try tx.upsert(model)
                                        }
                                    }
                                }
                            }
                            try await group.waitForAll()
                        }
                    }
                }
            }
        }
    }
    outboxBenchmarks()
    reopenBenchmarks()
}

/// Times `body` on the continuous clock.
func timedSync(_ body: () throws -> Void) rethrows -> Duration {
    let clock = ContinuousClock()
    let started = clock.now
    try body()
    return clock.now - started
}
