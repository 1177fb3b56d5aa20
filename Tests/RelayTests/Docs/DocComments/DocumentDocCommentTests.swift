import Foundation
import Relay
import RelayTesting
import Testing

/// The examples in the doc comments of models, aliases, relations and transactions, as they read there (see
/// `SnippetTests`).
@Suite("Doc comment examples: the document", .timeLimit(.minutes(3)))
struct DocumentDocCommentTests {
    struct Order: Model {
        let id: UUID
        var total: Int
    }

    struct OrderLine: Model {
        let id: UUID
        var sku: String
    }

    struct Invoice: Model {
        let id: UUID
        let order: AliasOf<Order>
    }

    private static func withDocument(_ body: (DataPoint, URL) async throws -> Void) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        try await DataPoint.testing { point, _ in
            try point.register(OrderLine.self, as: "lines")
            try point.register(Invoice.self, as: "invoices")
            try await body(point, server.url("/webhook"))
        }
    }

    @Test("a model is saved with the call that follows from it, and read back")
    func model() async throws {
        try await Self.withDocument { point, webhook in
            let orderID = UUID()
            try point.register(Order.self, as: "orders")
            try await point.transaction { tx in
                try tx.upsert(Order(id: orderID, total: 42))
                tx.enqueue(try CallOperation.http(HTTPCall(method: .post, url: webhook)))
            }
            let order = try point.model(Order.self, id: orderID)
            #expect(order?.total == 42)
        }
    }

    @Test("a transaction's handles, and a follower of its collection")
    func transactionAndChanges() async throws {
        try await Self.withDocument { point, webhook in
            try point.register(Order.self, as: "orders")
            let order = Order(id: UUID(), total: 7)
            let payload = Data(#"{"total": 7}"#.utf8)
            let changes = try point.changes(of: Order.self)
            let handles = try await point.transaction { tx in
                try tx.upsert(order)
                tx.enqueue(try CallOperation.http(HTTPCall(method: .post, url: webhook, body: .data(payload))))
            }
            #expect(handles.count == 1)
            var seen: Order?
            for await event in changes {
                if let change = event.kind.change, let order = try change.model(as: Order.self) {
                    print(order)
                    seen = order
                    break
                }
            }
            #expect(seen?.id == order.id)
        }
    }

    @Test("an alias resolves to its model, typed or not")
    func aliases() async throws {
        try await Self.withDocument { point, _ in
            try point.register(Order.self, as: "orders")
            let invoice = Invoice(id: UUID(), order: AliasOf(Order(id: UUID(), total: 3)))
            do {
                let order = Order(id: UUID(), total: 4)
                try await point.transaction { tx in
                    try tx.upsert(order)
                    try tx.upsert(invoice)
                }
                let alias = try point.alias(of: order)
                let same = try point.resolve(alias, as: Order.self)
                #expect(same.total == 4)
            }
            try await point.transaction { tx in try tx.upsert(Order(id: UUID(uuidString: invoice.order.id)!, total: 3))
            }
            let order = try point.resolve(invoice.order)
            #expect(order.total == 3)
        }
    }

    @Test("related models by kind")
    func related() async throws {
        try await Self.withDocument { point, _ in
            try point.register(Order.self, as: "orders")
            let order = Order(id: UUID(), total: 1)
            let line = OrderLine(id: UUID(), sku: "A-1")
            try await point.transaction { tx in
                try tx.upsert(order)
                try tx.upsert(line)
                try tx.relate(order, .owns, line)
            }
            let lines = try point.related(to: order, by: .owns, as: OrderLine.self)
            #expect(lines.map(\.sku) == ["A-1"])
        }
    }
}
