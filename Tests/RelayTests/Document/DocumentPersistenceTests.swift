import Foundation
import Relay
import RelayTesting
import Testing

@Suite("S25 document persistence", .timeLimit(.minutes(3)))
struct DocumentPersistenceTests {
    @Test("S25: models survive a crash through the journal, and a close through the snapshot")
    func modelsPersist() async throws {
        try await withTemporaryFolder { folder in
            let kept = Order(id: UUID(), total: 7)
            let removed = Order(id: UUID(), total: 8)
            // It retries an hour later on the manual clock: the crash finds it pending.
            let notify = CallOperation(kind: "notify", payload: Data("sent".utf8))
            let reopened = try await DataPoint.crashAndReopen(
                at: folder.url, clock: ManualClock(),
                prepare: {
                    $0.register(
                        ClosureExecutor { _, _ in .retry(after: .seconds(3600), reason: "later") }, for: "notify")
                }
            ) { point in
                try point.register(Order.self, as: "orders")
                try await point.transaction { tx in
                    try tx.upsert(kept)
                    try tx.upsert(removed)
                }
                try await point.transaction { tx in
                    try tx.remove(Order.self, id: removed.id)
                    tx.enqueue(notify)
                }
            }
            // The journal replayed both transactions whole: the models and the operation of the second one together.
            try reopened.register(Order.self, as: "orders")
            #expect(try reopened.models(Order.self) == [kept])
            #expect(try await reopened.status(of: notify.id) != nil)
            try await reopened.shutdown()

            // The close compacted the journal into the snapshot, which now holds the models.
            let state = try FileStorage.read(at: folder.url)
            #expect(state.models["orders"]?.count == 1)
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                try point.register(Order.self, as: "orders")
                #expect(try point.model(Order.self, id: kept.id) == kept)
                #expect(try point.count(of: Order.self) == 1)
            }
        }
    }

    @Test("S25: a model stored under a collection reads as a typed error when registered as another type")
    func mismatchedTypeIsTyped() async throws {
        try await withTemporaryFolder { folder in
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                try point.register(Order.self, as: "orders")
                try await point.transaction { tx in try tx.upsert(Order(id: UUID(), total: 1)) }
            }
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                try point.register(Customer.self, as: "orders")
                let error = #expect(throws: RelayError.self) { _ = try point.models(Customer.self) }
                #expect(error?.code == .modelEncoding)
            }
        }
    }
}
