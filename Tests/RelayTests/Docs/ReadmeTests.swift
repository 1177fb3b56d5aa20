import Foundation
import Relay
import RelayTesting
import Synchronization
import Testing

// The README's code, line for line (see SnippetTests), and tests that run it.

enum Readme {
    /// The first example keeps its state in the working directory, so it is compiled here and run, on a volatile
    /// store, by ``ReadmeTests/httpCall()``.
    static func quickStart(ordersURL: URL) async throws {
        try await DataPoint.with { point in  // keeps its state in ./.relay
            _ = try await postOrder(point, ordersURL: ordersURL)
        }
    }

    static func postOrder(_ point: DataPoint, ordersURL: URL) async throws -> Int {
        let call = HTTPCall(method: .post, url: ordersURL, body: .data(Data(#"{"sku":"A-1"}"#.utf8)))
        let response = try await point.execute(call)
        print(response.status)
        return response.status
    }

    struct SendReceipt: TypedOperation {
        static let kind: CallKind = "send-receipt"
        struct Input: Codable, Sendable { let orderID: Int }
        struct Output: Codable, Sendable { let messageID: String }

        func run(_ input: Input, context: CallContext) async throws -> Output {
            Output(messageID: "receipt-\(input.orderID)")  // call your mail service here
        }
    }

    struct Order: Model {
        let id: Int
        var status: String
    }

    static func typedAndTransaction(_ point: DataPoint) async throws -> (String, String) {
        point.register(SendReceipt())
        let receipt = try await point.execute(SendReceipt.self, SendReceipt.Input(orderID: 7))

        try point.register(Order.self, as: "orders")
        let handles = try await point.transaction { transaction in
            try transaction.upsert(Order(id: 7, status: "paid"))
            transaction.enqueue(try TypedCall<SendReceipt>(SendReceipt.Input(orderID: 7)))
        }
        let sent = try await TypedHandle<SendReceipt>(handles[0]).value
        return (receipt.messageID, sent.messageID)
    }

    static func replayDeadLetters(_ point: DataPoint) async throws {
        for status in try point.operations(.deadLetters()).statuses {
            try await point.replay(status.id)  // a new operation, the same payload and idempotency key
        }
    }
}

@Suite("README", .timeLimit(.minutes(3)))
struct ReadmeTests {
    @Test("the README's HTTP call is retried after a 503 under one idempotency key, and returns its status")
    func httpCall() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/orders", [.retryAfter("0"), .json(#"{"id": 7}"#, status: 201)])
        let status = try await DataPoint.with(storage: .volatile) { point in
            try await Readme.postOrder(point, ordersURL: server.url("/orders"))
        }
        #expect(status == 201)
        let keys = server.idempotencyKeys
        #expect(keys.count == 2 && Set(keys).count == 1)
    }

    @Test("the README's typed operation and transaction run as written")
    func typedAndTransaction() async throws {
        try await DataPoint.with(storage: .volatile) { point in
            let (receipt, sent) = try await Readme.typedAndTransaction(point)
            #expect(receipt == "receipt-7")
            #expect(sent == "receipt-7")
            #expect(try point.model(Readme.Order.self, id: 7)?.status == "paid")
        }
    }

    @Test("the README's dead-letter loop replays each failed operation once")
    func replayLoop() async throws {
        try await DataPoint.with(storage: .volatile) { point in
            let calls = Mutex(0)
            point.register(
                ClosureExecutor { _, _ in
                    let call = calls.withLock { count in
                        count += 1
                        return count
                    }
                    return call == 1 ? .failed(reason: "declined") : .completed(Data())
                }, for: "charge")
            _ = try? await point.execute(CallOperation(kind: "charge", retryPolicy: .never))
            try await Readme.replayDeadLetters(point)
            try await point.idle()
            #expect(point.operationCounts() == [.failed: 1, .completed: 1])
        }
    }
}
