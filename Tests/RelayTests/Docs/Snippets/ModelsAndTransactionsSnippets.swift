import Foundation
import Relay

// The code of the "Models and Transactions" article, line for line, compiled with the tests (see SnippetTests);
// ModelsAndTransactionsArticleTests runs it.

enum ModelsAndTransactionsSnippets {
    struct Order: Model {
        let id: UUID
        var total: Int
    }

    struct Invoice: Model {
        let id: Int
        let order: AliasOf<Order>
    }

    static func outbox(_ point: DataPoint, partner: URL) async throws -> [CallHandle] {
        try point.register(Order.self, as: "orders")

        let order = Order(id: UUID(), total: 42)
        let handles = try await point.transaction { tx in
            try tx.upsert(order)
            tx.enqueue(
                try CallOperation.http(
                    HTTPCall(method: .post, url: partner, body: .data(try JSONEncoder().encode(order)))))
        }
        return handles
    }

    static func readAlias(_ point: DataPoint, invoice: Invoice) throws -> Order? {
        let order = try point.resolve(invoice.order)
        return order
    }

    static func printTotals(_ point: DataPoint) async throws {
        for await event in try point.changes(of: Order.self) {
            if let change = event.kind.change, let order = try change.model(as: Order.self) {
                print(order.total)
            }
        }
    }
}
