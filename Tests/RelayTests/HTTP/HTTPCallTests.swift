import Foundation
import Relay
import RelayTesting
import Testing

@Suite("HTTP calls over loopback with URLSession", .timeLimit(.minutes(1)))
struct HTTPCallTests {
    struct Order: Codable, Equatable {
        let id: Int
        let sku: String
    }

    @Test("A GET returns status, headers, body, pretty content and a typed decode")
    func getReturnsTheResponse() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/orders/7", [.json(#"{"sku":"A-1","id":7}"#)])
        try await DataPoint.with(storage: .volatile) { point in
            let response = try await point.execute(HTTPCall(url: server.url("/orders/7")))
            #expect(response.status == 200)
            #expect(response.header("content-type") == "application/json")
            #expect(response.rawString == #"{"sku":"A-1","id":7}"#)
            #expect(response.prettyContent.contains("\n"))
            #expect(try response.decode(Order.self) == Order(id: 7, sku: "A-1"))
            server.script("/orders/7", [.json(#"{"sku":"A-1","id":7}"#)])
            #expect(try await point.execute(HTTPCall(url: server.url("/orders/7")), as: Order.self).id == 7)
        }
        #expect(server.requests(to: "/orders/7").map(\.method) == ["GET", "GET"])
        #expect(server.requests.allSatisfy { $0.header("Idempotency-Key") == nil })
    }

    @Test("A status that is neither accepted nor retryable fails at once, with one request")
    func clientErrorFails() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        try await DataPoint.with(storage: .volatile) { point in
            let error = await #expect(throws: RelayError.self) {
                _ = try await point.execute(HTTPCall(url: server.url("/missing")))
            }
            #expect(error?.code == .operationFailed)
            #expect(error?.message.contains("404") == true)
        }
        #expect(server.requests.count == 1)
    }

    @Test("S17: a malformed URL or a credential in the call is a typed error, and nothing is stored")
    func badCallsAreRejected() async throws {
        try await withTemporaryFolder { folder in
            try await DataPoint.with(storage: .file(at: folder.url)) { point in
                let relative = try #require(URL(string: "orders/7"))
                let invalid = await #expect(throws: RelayError.self) {
                    _ = try await point.execute(HTTPCall(url: relative))
                }
                #expect(invalid?.code == .invalidURL)
                let ftp = try #require(URL(string: "ftp://127.0.0.1/file"))
                #expect(throws: RelayError.self) { _ = try CallOperation.http(HTTPCall(url: ftp)) }
                let secret = await #expect(throws: RelayError.self) {
                    let url = try #require(URL(string: "http://127.0.0.1/"))
                    _ = try await point.execute(HTTPCall(url: url, headers: ["authorization": "Bearer s3cr3t"]))
                }
                #expect(secret?.code == .secretInCall)
                #expect(secret?.message.contains("s3cr3t") == false)
                #expect(point.metrics().total == MetricsSnapshot.Counts())
            }
        }
    }
}
