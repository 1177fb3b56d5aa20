import Foundation
import Relay
import RelayServer
import RelayTesting
import Testing

@Suite("AsyncHTTPClientTransport on loopback", .timeLimit(.minutes(1)))
struct AsyncHTTPClientTransportTests {
    /// Runs `body` with a DataPoint whose HTTP calls go through the transport, which is shut down afterwards.
    private func running(_ body: (DataPoint, AsyncHTTPClientTransport) async throws -> Void) async throws {
        let transport = AsyncHTTPClientTransport()
        do {
            try await DataPoint.with(storage: .volatile, configuration: .testing) { point in
                point.register(HTTPExecutor(transport: transport), for: .http)
                try await body(point, transport)
            }
        } catch {
            try? await transport.shutdown()
            throw error
        }
        try await transport.shutdown()
    }

    @Test("a call goes out with its headers and body, and its response comes back whole")
    func roundTrip() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/orders", [.json(#"{"id":7}"#, status: 201)])
        try await running { point, _ in
            let response = try await point.execute(
                HTTPCall(
                    method: .post, url: server.url("/orders"), headers: ["X-Order": "A-1"],
                    body: .data(Data(#"{"sku":"A-1"}"#.utf8))))
            #expect(response.status == 201)
            #expect(response.body == Data(#"{"id":7}"#.utf8))
        }
        let received = try #require(server.requests(to: "/orders").first)
        #expect(received.method == "POST")
        #expect(received.header("X-Order") == "A-1")
        #expect(received.body == Data(#"{"sku":"A-1"}"#.utf8))
        #expect(received.idempotencyKey != nil)
    }

    @Test("an upload streams a file, and a download streams its body to a file")
    func filesBothWays() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/upload", [.status(204)])
        server.script("/download", [.zeros(count: 3 << 20)])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ahc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let upload = folder.appendingPathComponent("upload.bin")
        let bytes = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: upload)
        let destination = folder.appendingPathComponent("download.bin")
        try await running { point, _ in
            _ = try await point.execute(HTTPCall(method: .put, url: server.url("/upload"), body: .file(upload)))
            _ = try await point.execute(HTTPCall(url: server.url("/download"), destination: destination))
        }
        #expect(server.requests(to: "/upload").first?.body == bytes)
        let downloaded = try Data(contentsOf: destination)
        #expect(downloaded.count == 3 << 20)
        #expect(downloaded.allSatisfy { $0 == 0 })
    }

    @Test("the transport follows no redirect itself: the executor does, once per hop")
    func noRedirectInTheClient() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/old", [.redirect(to: server.url("/new")), .redirect(to: server.url("/new"))])
        server.script("/new", [.status(200, "moved")])
        let transport = AsyncHTTPClientTransport()
        let direct = try await transport.send(
            CallRequest(method: .get, url: server.url("/old")), writingBodyTo: nil, onResponseHeaders: {})
        #expect(direct.status == 302)
        #expect(server.requests(to: "/new").isEmpty)
        try await transport.shutdown()
        try await running { point, _ in
            let response = try await point.execute(HTTPCall(url: server.url("/old")))
            #expect(response.body == Data("moved".utf8))
        }
        #expect(server.requests(to: "/old").count == 2)
        #expect(server.requests(to: "/new").count == 1)
    }

    @Test("a refused connection is a connectivity failure; an attempt past its timeout ends at once")
    func failuresAndTimeouts() async throws {
        let transport = AsyncHTTPClientTransport()
        let closed = try LoopbackServer()
        let url = closed.url("/gone")
        closed.stop()
        let refusing = ContinuousClock.now
        let refused = await #expect(throws: HTTPTransportError.self) {
            try await transport.send(CallRequest(method: .get, url: url), writingBodyTo: nil, onResponseHeaders: {})
        }
        #expect(refused?.isConnectivityFailure == true)
        #expect(ContinuousClock.now - refusing < .seconds(5), "at once, not after a connect timeout")
        try await transport.shutdown()

        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/slow", [.init(status: 200, delay: .seconds(30))])
        try await running { point, _ in
            let started = ContinuousClock.now
            let handle = try await point.enqueue(
                .http(HTTPCall(url: server.url("/slow"), timeout: .milliseconds(200)), retryPolicy: .never))
            let outcome = try await handle.outcome
            guard case .failed(let failure) = outcome else {
                Issue.record("\(outcome)")
                return
            }
            #expect(failure.reason.contains("timed out"))
            #expect(ContinuousClock.now - started < .seconds(10))
        }
    }
}
