import Foundation
import Hummingbird
import HummingbirdTesting
import Orders
import Relay
import RelayServer
import RelayTesting
import Testing

/// The orders example through its router, with its services running, against a receiver on loopback.
@Suite("The orders example", .timeLimit(.minutes(1)))
struct OrdersTests {
    static func post(_ order: Order, to client: some TestClientProtocol) async throws -> (HTTPResponse.Status, Data) {
        let body = ByteBuffer(bytes: try JSONEncoder().encode(order))
        return try await client.execute(uri: "/orders", method: .post, body: body) { response in
            (response.status, Data(buffer: response.body))
        }
    }

    static func order(in request: LoopbackServer.Request) throws -> Order {
        try JSONDecoder().decode(Order.self, from: request.body)
    }

    static func application(
        _ point: DataPoint, receiver: LoopbackServer
    ) throws -> some ApplicationProtocol {
        try ordersApplication(point: point, receiver: receiver.baseURL, transport: AsyncHTTPClientTransport())
    }

    @Test("an order is saved and answered once its webhook is delivered; its receipt follows the webhook")
    func deliversWebhooksThenReceipts() async throws {
        let receiver = try LoopbackServer()
        receiver.setDefault("/webhooks", .status(200))
        receiver.setDefault("/receipts", .status(200))
        let point = try await DataPoint(storage: .volatile, configuration: .testing)
        let orders = (1...8).map { Order(id: $0, item: "item \($0)") }
        try await Self.application(point, receiver: receiver).test(.router) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for order in orders {
                    group.addTask {
                        let (status, body) = try await Self.post(order, to: client)
                        #expect(status == .created)
                        #expect(try JSONDecoder().decode(Order.self, from: body) == order)
                        let delivered = receiver.requests(to: "/webhooks").map { try? Self.order(in: $0) }
                        #expect(delivered.contains(order), "delivered before the answer")
                    }
                }
                try await group.waitForAll()
            }
            await receiver.waitForRequests(2 * orders.count)
            #expect(try point.models(Order.self).sorted { $0.id < $1.id } == orders)
        }
        let arrivals = try receiver.requests.map { ($0.path, try Self.order(in: $0)) }
        #expect(arrivals.count == 2 * orders.count)
        for order in orders {
            let webhook = arrivals.firstIndex { $0 == ("/webhooks", order) }
            let receipt = arrivals.firstIndex { $0 == ("/receipts", order) }
            #expect(webhook != nil && receipt != nil && webhook! < receipt!, "order \(order.id)")
        }
    }

    @Test("a webhook the receiver refuses for good answers 502, and its receipt is never sent")
    func refusedWebhookIsABadGateway() async throws {
        let receiver = try LoopbackServer()
        receiver.setDefault("/webhooks", .status(422))
        let point = try await DataPoint(storage: .volatile, configuration: .testing)
        try await Self.application(point, receiver: receiver).test(.router) { client in
            let (status, _) = try await Self.post(Order(id: 1, item: "tea"), to: client)
            #expect(status == .badGateway)
        }
        #expect(receiver.requests(to: "/webhooks").count == 1)
        #expect(receiver.requests(to: "/receipts").isEmpty)
    }

    @Test("a DataPoint at its limit answers 503 with Retry-After, and saves nothing of the order")
    func overloadIsServiceUnavailable() async throws {
        let receiver = try LoopbackServer()
        var configuration = DataPoint.Configuration.testing
        configuration.maximumPending = 1
        let point = try await DataPoint(storage: .volatile, configuration: configuration)
        try await Self.application(point, receiver: receiver).test(.router) { client in
            let body = ByteBuffer(bytes: try JSONEncoder().encode(Order(id: 1, item: "tea")))
            try await client.execute(uri: "/orders", method: .post, body: body) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.headers[.retryAfter] == "1")
            }
            #expect(try point.models(Order.self).isEmpty)
        }
        #expect(receiver.requests.isEmpty)
    }
}
