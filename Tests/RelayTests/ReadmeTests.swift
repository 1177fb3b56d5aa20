import Foundation
import Relay
import RelayTesting
import Testing

/// Keeps the README's quick start true: this is its code, with prints turned into expectations.
@Suite("README", .timeLimit(.minutes(1)))
struct ReadmeTests {
    @Test("the README's quick start runs as written")
    func quickStart() async throws {
        try await DataPoint.with(storage: .volatile) { point in
            point.register(ClosureExecutor { operation, _ in .completed(operation.payload) }, for: "echo")
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 4))
            let events = point.events()  // subscribe before enqueueing

            let fetch = CallOperation(kind: "echo", payload: Data("profile".utf8))
            let upload = CallOperation(kind: "echo", sequenceName: .uploads, dependencies: [fetch.id])
            let handles = try await point.enqueue([fetch, upload])  // one atomic commit

            #expect(String(decoding: try await handles[0].value, as: UTF8.self) == "profile")
            var finished: [UUID] = []
            for await event in events where event.kind.isTerminal {
                finished.append(event.operationID!)
                if event.operationID == upload.id { break }
            }
            #expect(finished == [fetch.id, upload.id])
            #expect(point.metrics().total.completed == 2)
        }
    }

    struct Order: Decodable { let id: Int }

    struct BearerToken: RequestAuthorizer {
        func authorize(_ request: inout HTTPRequest, for operation: CallOperation) async throws {
            request.setSecretHeader("Authorization", "Bearer \(ProcessInfo.processInfo.environment["API_TOKEN"] ?? "")")
        }
    }

    @Test("the README's HTTP call runs as written, against a loopback server")
    func httpQuickStart() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/orders", [.status(503), .json(#"{"id": 7}"#, status: 201)])
        let executors: [CallKind: any CallExecutor] = [.http: HTTPExecutor(authorizer: BearerToken())]
        let id = try await DataPoint.with(storage: .volatile, executors: executors) { point in
            let call = HTTPCall(
                method: .post,
                url: server.url("/orders"),
                headers: ["Content-Type": "application/json"],
                body: .data(Data(#"{"sku":"A-1"}"#.utf8)),
                timeout: .milliseconds(300)
            )
            // The README's call, without the retry's random backoff: the test asks for an immediate retry.
            let operation = try CallOperation.http(
                call, retryPolicy: RetryPolicy(initialDelay: .zero, jitter: .none))
            return try await point.enqueue(operation).response.decode(Order.self).id
        }
        #expect(id == 7)
        let keys = server.idempotencyKeys
        #expect(keys.count == 2 && Set(keys).count == 1)
        #expect(server.requests.allSatisfy { $0.header("Authorization")?.hasPrefix("Bearer") == true })
    }

    struct Purchase: Model {
        let id: UUID
        var total: Int
    }

    @Test("the README's transaction runs as written, against a loopback server")
    func transactionQuickStart() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/purchases", .status(201))
        let partnerURL = server.url("/purchases")
        let total = try await DataPoint.with(storage: .volatile, waitForPending: true) { point in
            try point.register(Purchase.self, as: "purchases")
            let purchase = Purchase(id: UUID(), total: 42)
            let body = try JSONEncoder().encode(purchase)
            // The purchase and the call that announces it are durable together, or not at all.
            try await point.transaction { tx in
                try tx.upsert(purchase)
                tx.enqueue(try CallOperation.http(HTTPCall(method: .post, url: partnerURL, body: .data(body))))
            }
            return try point.model(Purchase.self, id: purchase.id)!.total
        }
        #expect(total == 42)
        #expect(server.requests(to: "/purchases").count == 1)
    }
}
