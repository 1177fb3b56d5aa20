import Foundation
import Relay
import RelayTesting
import Testing

/// A model that refers to another through aliases it stores.
struct Invoice: Model, Equatable {
    let id: Int
    let order: AliasOf<Order>
    let anything: Alias
}

@Suite("S22 aliases; key-values", .timeLimit(.minutes(3)))
struct AliasAndValueTests {
    @Test("S22: typed and type-erased aliases are stored in models and resolve; strict resolution throws typed errors")
    func aliasesResolve() async throws {
        try await withManualPoint { point, _ in
            try point.register(Order.self, as: "orders")
            try point.register(Customer.self, as: "customers")
            try point.register(Invoice.self, as: "invoices")
            let order = Order(id: UUID(), total: 3)
            let invoice = Invoice(id: 1, order: AliasOf(order), anything: try point.alias(of: order))
            try await point.transaction { tx in
                try tx.upsert(order)
                try tx.upsert(invoice)
            }
            let stored = try #require(try point.model(Invoice.self, id: 1))
            #expect(stored == invoice)
            #expect(try point.resolve(stored.order) == order)
            #expect(try point.resolve(stored.anything, as: Order.self) == order)

            let mismatch = #expect(throws: RelayError.self) {
                _ = try point.resolve(stored.anything, as: Customer.self)
            }
            #expect(mismatch?.code == .typeMismatch)
            let missing = AliasOf<Order>(id: UUID())
            let notFound = #expect(throws: RelayError.self) { _ = try point.resolve(missing) }
            #expect(notFound?.code == .modelNotFound)
            #expect(point.resolveIfPresent(missing) == nil)
            #expect(point.resolveIfPresent(stored.anything, as: Customer.self) == nil)
        }
    }

    @Test("Key-values are set and removed in transactions, beside models; Relay's collection names are its own")
    func keyValues() async throws {
        try await withTemporaryFolder { folder in
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                try await point.transaction { tx in
                    try tx.setValue("2026-11-26T10:00:00Z", forKey: "lastSync")
                    try tx.setValue(42, forKey: "cursor")
                }
                try await point.transaction { tx in tx.removeValue(forKey: "cursor") }
                let reserved = #expect(throws: RelayError.self) { try point.register(Order.self, as: "relay.values") }
                #expect(reserved?.code == .collectionConflict)
                let wrongType = #expect(throws: RelayError.self) { _ = try point.value(Int.self, forKey: "lastSync") }
                #expect(wrongType?.code == .modelEncoding)
            }
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                let lastSync = try point.value(String.self, forKey: "lastSync")
                let cursor = try point.value(Int.self, forKey: "cursor")
                #expect(lastSync == "2026-11-26T10:00:00Z")
                #expect(cursor == nil)
            }
        }
    }
}
