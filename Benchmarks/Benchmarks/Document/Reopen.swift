import Benchmark
import Foundation
import GRDB
import Relay

/// P10: reopening a store that holds a million models of about 200 bytes.
///
/// Time, and memory kept per model beyond its encoded size, with a scaling factor of one million so that the medians
/// read per model. Beside it, the limit: reading the same million encoded models from a flat file of length-prefixed
/// records into a Dictionary by id; and GRDB opening a SQLite database of the same rows and reading them into one.
func reopenBenchmarks() {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .memoryLeakedBytes], warmupIterations: 1, scalingFactor: .mega,
        maxDuration: .seconds(120), maxIterations: 5)
    Benchmark("P10 Relay reopen of models n=1000000", configuration: configuration) { benchmark in
        let folder = try await storeWithModels(1_000_000)
        benchmark.startMeasurement()
        let point = try await DataPoint(storage: .file(at: folder))
        benchmark.stopMeasurement()
        try point.register(Item.self, as: "items")
        let count = try point.count(of: Item.self)
        precondition(count == 1_000_000, "the store lost models")
        blackHole(point)
        try await point.shutdown()
    }
    Benchmark("P10 GRDB open and read models into a Dictionary n=1000000", configuration: configuration) { benchmark in
        let folder = try databaseOfModels(1_000_000)
        benchmark.startMeasurement()
        let database = try DatabaseQueue(path: folder.appendingPathComponent("db.sqlite").path)
        let models = try database.read { db in
            var models: [String: Data] = [:]
            models.reserveCapacity(1_000_000)
            let rows = try Row.fetchCursor(db, sql: "SELECT id, body FROM items")
            while let row = try rows.next() { models[row[0]] = row[1] }
            return models
        }
        benchmark.stopMeasurement()
        precondition(models.count == 1_000_000, "the database lost models")
        blackHole(models)
    }
    Benchmark("P10 flat file of models into a Dictionary n=1000000", configuration: configuration) { benchmark in
        let file = try flatFileOfModels(1_000_000)
        benchmark.startMeasurement()
        let models = try readFlatFile(file)
        benchmark.stopMeasurement()
        precondition(models.count == 1_000_000, "the flat file lost models")
        blackHole(models)
    }
}

private func storeWithModels(_ count: Int) async throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("relay-benchmark-models-\(count)")
    if FileManager.default.fileExists(atPath: folder.appendingPathComponent("snapshot").path) { return folder }
    try? FileManager.default.removeItem(at: folder)
    try await DataPoint.with(storage: .file(at: folder, options: FileStorage.Options(fsync: .never))) { point in
        try point.register(Item.self, as: "items")
        for start in stride(from: 0, to: count, by: 10_000) {
            try await point.transaction { tx in
                for id in start..<min(start + 10_000, count) { try tx.upsert(item(id)) }
            }
        }
    }
    return folder
}

private func databaseOfModels(_ count: Int) throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("relay-benchmark-grdb-models-\(count)")
    let path = folder.appendingPathComponent("db.sqlite").path
    if FileManager.default.fileExists(atPath: path) { return folder }
    try? FileManager.default.removeItem(at: folder)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let database = try outboxDatabase(at: folder)
    let encoder = JSONEncoder()
    for start in stride(from: 0, to: count, by: 10_000) {
        try database.write { db in
            for id in start..<min(start + 10_000, count) {
                try db.execute(
                    sql: "INSERT INTO items (id, body) VALUES (?, ?)",
                    arguments: ["\(id)", try encoder.encode(item(id))])
            }
        }
    }
    return folder
}

private func flatFileOfModels(_ count: Int) throws -> URL {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("relay-benchmark-flat-models-\(count)")
    if FileManager.default.fileExists(atPath: file.path) { return file }
    var bytes = Data()
    let encoder = JSONEncoder()
    for id in 0..<count {
        let id = "\(id)"
        let encoded = try encoder.encode(item(Int(id)!))
        for part in [Data(id.utf8), encoded] {
            withUnsafeBytes(of: UInt32(part.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(part)
        }
    }
    try bytes.write(to: file)
    return file
}

private func readFlatFile(_ file: URL) throws -> [String: Data] {
    let bytes = try Data(contentsOf: file)
    var models: [String: Data] = [:]
    models.reserveCapacity(1_000_000)
    var offset = bytes.startIndex
    func part() -> Data {
        let length = bytes[offset..<offset + 4].withUnsafeBytes {
            Int(UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)))
        }
        defer { offset += 4 + length }
        return Data(bytes[offset + 4..<offset + 4 + length])
    }
    while offset < bytes.endIndex {
        let id = String(decoding: part(), as: UTF8.self)
        models[id] = part()
    }
    return models
}
