import Foundation
import Relay
import RelayTesting
import Testing

/// The worker's models, as it defines them.
private struct Half: Model {
    let id: String
    let transaction: Int
}

@Suite("S25 document crash recovery with SIGKILL", .serialized, .timeLimit(.minutes(5)))
struct DocumentCrashTests {
    @Test(
        "S25: after SIGKILL, every acknowledged transaction is whole, none is partial, and every completion has its changes",
        arguments: 0..<50
    )
    func killAndRecover(seed: Int) async throws {
        try await withTemporaryFolder { folder in
            let worker = try ChildProcess(product: "RelayCrashWorker", arguments: ["document", folder.url.path])
            let lines = await worker.readLines { $0.count >= 1 + (seed * 7) % 30 }
            await worker.kill()
            let acknowledged = lines.filter { $0.hasPrefix("ack ") }.map { $0.split(separator: " ") }

            // A completed operation has its receipt, and a receipt its completed operation, in what the store holds.
            let stored = try FileStorage.inspect(at: folder.url).state
            let receipts = Set((stored.models["receipts"] ?? [:]).keys)
            let completed = Set(
                stored.operations.filter {
                    if case .completed = $0.result { return true }
                    return false
                }.map(\.operation.id.uuidString))
            #expect(receipts == completed, "a completion and its receipt were recorded apart")

            let point = try await DataPoint(storage: .file(at: folder.url))
            try point.register(Half.self, as: "halves")
            let halves = Dictionary(grouping: try point.models(Half.self), by: \.transaction)
            // Whole or absent: never one half of a transaction without the other.
            #expect(halves.values.allSatisfy { $0.count == 2 }, "a transaction was recorded in part")
            for line in acknowledged {
                let transaction = try #require(Int(line[1]))
                let id = try #require(UUID(uuidString: String(line[2])))
                #expect(halves[transaction]?.count == 2, "acknowledged transaction \(transaction) was lost")
                #expect(try await point.status(of: id) != nil, "the operation of transaction \(transaction) was lost")
            }
            try await point.shutdown()
        }
    }
}
