import Foundation
import Relay
import RelayTesting
import Testing

@Suite("HTTP calls over loopback with URLSession", .timeLimit(.minutes(3)))
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

    @Test("Every field of a call reaches the server: method, URL, headers, body and the accepted status codes")
    func everyFieldOfACallIsSent() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/orders", [.status(418, "teapot")])
        let call = HTTPCall(
            method: "PATCH",
            url: server.url("/orders?expand=lines"),
            headers: ["X-Trace": "t-1", "Content-Type": "text/plain", "X-Émoji": "✓"],
            body: .data(Data("patched".utf8)),
            acceptedStatusCodes: [200, 418],
            retryableStatusCodes: [503, 599],
            timeout: .milliseconds(2500),
            maximumRetryAfter: .seconds(7),
            maximumRedirects: 0
        )
        try await DataPoint.with(storage: .volatile) { point in
            let response = try await point.execute(call)
            #expect(response.status == 418)
            #expect(response.rawString == "teapot")
        }
        let request = try #require(server.requests.first)
        #expect(request.method == "PATCH")
        #expect(request.target == "/orders?expand=lines")
        #expect(request.header("X-Trace") == "t-1")
        #expect(request.header("Content-Type") == "text/plain")
        #expect(request.body == Data("patched".utf8))
        #expect(request.header("Idempotency-Key") != nil)
    }

    @Test("A call stored as JSON, as earlier versions stored it, still runs")
    func aJSONPayloadStillRuns() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/legacy", [.status(201, "made")])
        let call = HTTPCall(method: .post, url: server.url("/legacy"), body: .data(Data("old".utf8)))
        let payload = try JSONEncoder().encode(call)
        try await DataPoint.with(storage: .volatile) { point in
            let handle = try await point.enqueue(CallOperation(kind: .http, payload: payload))
            let response = try await handle.response
            #expect(response.status == 201)
            // The handle's value is the body, for HTTP as for any operation.
            #expect(try await handle.value == Data("made".utf8))
        }
        #expect(server.requests(to: "/legacy").map(\.body) == [Data("old".utf8)])
    }

    @Test("A payload that is not an HTTP call fails the operation with a reason, and sends nothing")
    func aPayloadThatIsNotACallFails() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        try await DataPoint.with(storage: .volatile) { point in
            for payload in [Data([0xB1, 1, 0xFF]), Data("{\"url\":1}".utf8), Data()] {
                let handle = try await point.enqueue(CallOperation(kind: .http, payload: payload))
                guard case .failed(let failure) = try await handle.outcome else {
                    Issue.record("a payload of \(payload.count) bytes did not fail")
                    continue
                }
                #expect(failure.reason.contains("not an HTTP call"))
                #expect(failure.attempts == 1)
            }
        }
        #expect(server.requests.isEmpty)
    }

    @Test("S8: a failed call keeps its cause and last response, its body bounded, and keeps both across a restart")
    func failureKeepsTheResponse() async throws {
        struct Problem: Decodable { let error: String }
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/orders", .json(#"{"error": "unknown sku"}"#, status: 422))
        server.setDefault("/large", .status(400, String(repeating: "x", count: 200_000)))
        try await withTemporaryFolder { folder in
            let rejected = try CallOperation.http(HTTPCall(method: .post, url: server.url("/orders")))
            let large = try CallOperation.http(HTTPCall(url: server.url("/large")))
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                let handles = try await point.enqueue([rejected, large])
                guard case .failed(let failure) = try await handles[0].outcome else {
                    Issue.record("expected the call to fail")
                    return
                }
                let response = try #require(failure.response)
                #expect(failure.cause == .executorFailed)
                #expect(response.status == 422)
                #expect(try response.decode(Problem.self).error == "unknown sku")
                guard case .failed(let largeFailure) = try await handles[1].outcome else {
                    Issue.record("expected the call to fail")
                    return
                }
                #expect(largeFailure.response?.body.count == CallFailure.maximumResponseBody)
            }
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                guard case .failed(let failure) = try await point.handle(for: rejected.id).outcome else {
                    Issue.record("expected the stored failure")
                    return
                }
                #expect(try failure.response?.decode(Problem.self).error == "unknown sku")
                #expect(failure.cause == .executorFailed)
            }
        }
    }

    @Test("S4: execute names the sequence a call runs on; calls on a wider sequence go out side by side")
    func executeOnASequence() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/hook", LoopbackServer.Reply.status(204).heldUntilReleased())
        try await DataPoint.with(storage: .volatile, configuration: testConfiguration) { point in
            try await point.upsertCallSequence(CallSequence(name: "webhooks", bunchSize: 4))
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await point.execute(HTTPCall(method: .post, url: server.url("/hook")), on: "webhooks")
                            .status
                    }
                }
                // All four are at the server at once; on `data`, with its bunch of one, only one would be.
                await server.waitForRequests(4)
                server.releaseStalled()
                for try await status in group { #expect(status == 204) }
            }
        }
    }
}
