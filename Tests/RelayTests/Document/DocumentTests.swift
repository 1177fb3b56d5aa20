import Foundation
import Relay
import RelayTesting
import Testing

struct Order: Model, Equatable {
    let id: UUID
    var total: Int
}

struct Customer: Model, Equatable {
    let id: String
    var name: String
}

/// A model that never encodes.
struct Unencodable: Model {
    let id: Int

    func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(id, .init(codingPath: [], debugDescription: "never"))
    }
}

@Suite("S19/S20 collections and transactions", .timeLimit(.minutes(3)))
struct DocumentTests {
    @Test("S19: a type registers once under one collection; reading a type that is not registered is a typed error")
    func registration() async throws {
        try await withManualPoint { point, _ in
            try point.register(Order.self, as: "orders")
            let twice = #expect(throws: RelayError.self) { try point.register(Order.self, as: "orders") }
            #expect(twice?.code == .collectionConflict)
            let taken = #expect(throws: RelayError.self) { try point.register(Customer.self, as: "orders") }
            #expect(taken?.code == .collectionConflict)
            let unknown = #expect(throws: RelayError.self) { _ = try point.models(Customer.self) }
            #expect(unknown?.code == .unknownCollection)
            #expect(try point.count(of: Order.self) == 0)
        }
    }

    @Test("S20: a transaction upserts, removes and enqueues in one commit; reads see it once it returns")
    func transactionCommits() async throws {
        let storage = RecordingStorage()
        try await withManualPoint(storage: storage) { point, _ in
            try point.register(Order.self, as: "orders")
            try point.register(Customer.self, as: "customers")
            let first = Order(id: UUID(), total: 10)
            let second = Order(id: UUID(), total: 20)
            try await point.transaction { tx in
                try tx.upsert(first)
                try tx.upsert(second)
                try tx.upsert(Customer(id: "ada", name: "Ada"))
            }
            let notify = CallOperation(kind: .echo, payload: Data("paid".utf8))
            let handles = try await point.transaction { tx in
                try tx.upsert(Order(id: first.id, total: 11))
                try tx.remove(Order.self, id: second.id)
                tx.enqueue(notify)
            }
            #expect(try point.model(Order.self, id: first.id) == Order(id: first.id, total: 11))
            #expect(try point.model(Order.self, id: second.id) == nil)
            #expect(try point.models(Customer.self) == [Customer(id: "ada", name: "Ada")])
            #expect(try point.models(Order.self) { $0.total > 10 }.map(\.id) == [first.id])
            #expect(try await handles[0].value == Data("paid".utf8))

            // One snapshot number per transaction, the operations' commit and the models' record side by side.
            let records = storage.records.filter { $0.kind == .commit || $0.kind == .models }
            #expect(records.map(\.kind) == [.models, .commit, .models])
            #expect(records.map(\.snapshot) == [1, 2, 2])
            #expect(records[2].modelChanges.map { $0.encoded == nil } == [false, true])
        }
    }

    @Test("S19: a read after a change sees the change, though an earlier read kept the model decoded")
    func readsSeeChanges() async throws {
        try await withManualPoint { point, _ in
            try point.register(Order.self, as: "orders")
            let id = UUID()
            for total in 1...3 {
                try await point.transaction { tx in try tx.upsert(Order(id: id, total: total)) }
                #expect(try point.model(Order.self, id: id)?.total == total)
                #expect(try point.resolve(AliasOf<Order>(id: id)).total == total)
            }
            try await point.transaction { tx in try tx.remove(Order.self, id: id) }
            #expect(try point.model(Order.self, id: id) == nil)
        }
    }

    @Test("S20: a rejected transaction changes nothing, models included")
    func rejectedTransaction() async throws {
        try await withManualPoint { point, _ in
            try point.register(Order.self, as: "orders")
            try point.register(Unencodable.self, as: "broken")
            let order = Order(id: UUID(), total: 5)
            let orphan = CallOperation(kind: .noop, dependencies: [UUID()])
            let rejected = await #expect(throws: RelayError.self) {
                try await point.transaction { tx in
                    try tx.upsert(order)
                    tx.enqueue(orphan)
                }
            }
            #expect(rejected?.code == .unknownDependency)
            let unencodable = await #expect(throws: RelayError.self) {
                try await point.transaction { tx in
                    try tx.upsert(order)
                    try tx.upsert(Unencodable(id: 1))
                }
            }
            #expect(unencodable?.code == .modelEncoding)
            #expect(try point.model(Order.self, id: order.id) == nil)
            #expect(point.pipeline.lastSnapshot == 0)
        }
    }

    @Test("S25: a model larger than the payload limit is a typed error, and nothing of its transaction applies")
    func oversizedModel() async throws {
        let small = DataPoint.Configuration(maximumPayloadSize: 64, shutdownGracePeriod: .zero)
        try await withManualPoint(configuration: small) { point, _ in
            try point.register(Customer.self, as: "customers")
            let error = await #expect(throws: RelayError.self) {
                try await point.transaction { tx in
                    try tx.upsert(Customer(id: "short", name: "Ada"))
                    try tx.upsert(Customer(id: "long", name: String(repeating: "x", count: 100)))
                }
            }
            #expect(error?.code == .payloadTooLarge)
            #expect(try point.count(of: Customer.self) == 0)
        }
    }

    @Test("S20: a transaction that only enqueues behaves exactly like enqueue")
    func enqueueOnlyTransaction() async throws {
        try await withManualPoint { point, _ in
            let operation = CallOperation(kind: .echo, payload: Data("same".utf8))
            let handles = try await point.transaction { tx in tx.enqueue(operation) }
            #expect(handles.map(\.id) == [operation.id])
            #expect(try await handles[0].value == Data("same".utf8))
            #expect(point.pipeline.lastSnapshot == 1)
        }
    }
}
