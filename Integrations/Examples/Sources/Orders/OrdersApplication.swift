import Foundation
import Hummingbird
import Relay
import RelayServer

/// An order, as a client posts it and as the service keeps it.
public struct Order: Model, ResponseCodable, Equatable {
    /// The order's number, which the client chooses.
    public let id: Int
    /// What was ordered.
    public let item: String

    /// Creates an order.
    public init(id: Int, item: String) {
        self.id = id
        self.item = item
    }
}

/// The orders service, whose `POST /orders` answers once the order's webhook is delivered.
///
/// The route saves the order and, in the same commit, enqueues its webhook and, once that is delivered, its receipt.
/// A crash after the answer loses nothing: the receipt is stored, and goes out when the service runs again.
///
/// - Parameters:
///   - point: Where orders and their calls are kept; the application runs it, with `transport`, as its services.
///   - receiver: Where webhooks (`/webhooks`) and receipts (`/receipts`) go.
///   - transport: The HTTP client that delivers them.
///   - configuration: The server's address and options.
/// - Returns: The application; `runService()` runs it until SIGTERM or SIGINT, then drains Relay.
/// - Throws: `RelayError` when `Order` cannot be registered in `point`.
public func ordersApplication(
    point: DataPoint,
    receiver: URL,
    transport: AsyncHTTPClientTransport,
    configuration: ApplicationConfiguration = ApplicationConfiguration()
) throws -> some ApplicationProtocol {
    try point.register(Order.self, as: "orders")
    point.register(HTTPExecutor(transport: transport), for: .http)
    let router = Router()
    router.post("orders") { request, context -> EditedResponse<Order> in
        let order = try await request.decode(as: Order.self, context: context)
        let body = HTTPCall.Body.data(try JSONEncoder().encode(order))
        let webhook = try CallOperation.http(
            HTTPCall(method: .post, url: receiver.appending(path: "webhooks"), body: body))
        let receipt = try CallOperation.http(
            HTTPCall(method: .post, url: receiver.appending(path: "receipts"), body: body),
            dependencies: [webhook.id])
        do {
            let handles = try await point.transaction { transaction in
                try transaction.upsert(order)
                transaction.enqueue([webhook, receipt])  // the receipt depends on the webhook
            }
            _ = try await handles[0].value(timeout: .seconds(10))
            return EditedResponse(status: .created, response: order)
        } catch let error as RelayError where error.code == .deadlineExceeded {
            // Saved, and still on its way: Relay goes on delivering it.
            return EditedResponse(status: .accepted, response: order)
        } catch let error as RelayError where error.code == .overloaded {
            throw HTTPError(.serviceUnavailable, headers: [.retryAfter: "1"], message: error.message)
        } catch let error as RelayError where error.code == .operationFailed {
            throw HTTPError(.badGateway, message: error.message)
        }
    }
    // Services stop in the reverse order: the server first, then Relay drains, and the client closes last.
    var application = Application(
        router: router, configuration: configuration, services: [transport, RelayService(point)])
    application.beforeServerStarts { try await point.ready() }
    return application
}
