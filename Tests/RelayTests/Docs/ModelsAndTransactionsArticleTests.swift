import Foundation
import Relay
import RelayTesting
import Testing

// The code of the "Models and Transactions" article, as it reads there, with what it leaves out (a partner's URL, a
// fetch, lines and invoices) filled in around it; its `Order` is DocumentTests' `Order`.

private struct Line: Model {
    let id: Int
}

/// The article's `Invoice`, named apart from AliasAndValueTests' own.
private struct ArticleInvoice: Model {
    let id: Int
    let order: AliasOf<Order>
}

@Suite("The Models and Transactions article", .timeLimit(.minutes(3)))
struct ModelsAndTransactionsArticleTests {
    @Test("S20: the article's outbox, staged changes, aliases, relations and change stream run as written")
    func articleExamples() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/partner", .status(202))
        server.setDefault("/customers/7", .json(#"{"id":"7","name":"Ada"}"#))
        let partner = server.url("/partner")
        let customerURL = server.url("/customers/7")
        try await DataPoint.with(storage: .volatile) { point in
            try point.register(Line.self, as: "lines")
            try point.register(ArticleInvoice.self, as: "invoices")
            try point.register(Customer.self, as: "customers")

            // The outbox: the order and the call that announces it, in one commit.
            try point.register(Order.self, as: "orders")
            let changes = try point.changes(of: Order.self)
            let order = Order(id: UUID(), total: 42)
            let handles = try await point.transaction { tx in
                try tx.upsert(order)
                tx.enqueue(
                    try CallOperation.http(
                        HTTPCall(method: .post, url: partner, body: .data(try JSONEncoder().encode(order)))))
            }
            #expect(try await handles[0].response.status == 202)
            #expect(try JSONDecoder().decode(Order.self, from: server.requests(to: "/partner")[0].body) == order)

            // An executor that completes with changes.
            let fetched = Order(id: UUID(), total: 7)
            @Sendable func fetchOrder(_ payload: Data) async throws -> Order { fetched }
            point.register(
                ClosureExecutor { operation, context in
                    let order = try await fetchOrder(operation.payload)
                    try context.stage { tx in try tx.upsert(order) }
                    return .completed(Data())
                }, for: "sync-order")
            _ = try await point.execute(CallOperation(kind: "sync-order"))
            #expect(try point.model(Order.self, id: fetched.id) == fetched)

            // A response upserted into a collection.
            let fetch = try CallOperation.http(HTTPCall(url: customerURL, responseCollection: "customers"))
            _ = try await point.execute(fetch)
            #expect(try point.model(Customer.self, id: "7")?.name == "Ada")

            // Aliases.
            let invoice = ArticleInvoice(id: 1, order: AliasOf(order))
            #expect(try point.resolve(invoice.order) == order)

            // Relations, and an erasure that takes the lines with the order.
            let lines = [Line(id: 1), Line(id: 2)]
            try await point.transaction { tx in
                try tx.upsert(order)
                for line in lines {
                    try tx.upsert(line)
                    try tx.relate(order, .owns, line)
                }
            }
            try await point.transaction { tx in try tx.erase(order) }  // the lines go with it
            #expect(try point.count(of: Line.self) == 0)

            // The change stream: the first change is the outbox's order.
            for await event in changes {
                if let change = event.kind.change, let order = try change.model(as: Order.self) {
                    #expect(order.total == 42)
                    break
                }
            }
        }
    }
}
