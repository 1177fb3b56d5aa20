import Foundation
import Relay
import RelayTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("S18 HTTP secrets, redirects, downloads and uploads", .timeLimit(.minutes(3)))
struct HTTPSecretAndFileTests {
    static let token = "Bearer s3cr3t-token-0042"
    static let apiKey = "k3y-value-0042"

    struct Credentials: RequestAuthorizer {
        func authorize(_ request: inout CallRequest, for operation: CallOperation) async throws {
            request.setSecretHeader("Authorization", HTTPSecretAndFileTests.token)
            request.setSecretHeader("X-Api-Key", HTTPSecretAndFileTests.apiKey)
        }
    }

    @Test("S18: credentials from the authorizer reach the server, and never the store files, events or errors")
    func secretsStayOutOfStorageAndEvents() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/private", [.retryAfter("0"), .status(201)])
        server.setDefault("/denied", .status(403))
        try await withTemporaryFolder { folder in
            let point = try await DataPoint(storage: .file(at: folder.url))
            point.register(HTTPExecutor(authorizer: Credentials()), for: .http)
            let recorder = EventRecorder(point)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await point.run() }
                let call = HTTPCall(method: .post, url: server.url("/private"), body: .data(Data("{}".utf8)))
                #expect(try await point.enqueue(CallOperation.http(call)).response.status == 201)
                let error = await #expect(throws: RelayError.self) {
                    let denied = try CallOperation.http(HTTPCall(method: .delete, url: server.url("/denied")))
                    _ = try await point.enqueue(denied).value
                }
                #expect(error.map { "\($0)" }?.contains("s3cr3t") == false)
                await point.simulateCrash()
                try await group.waitForAll()
            }
            let described = recorder.events.map { "\($0)" }.joined()
            for secret in [Self.token, Self.apiKey] {
                #expect(!described.contains(secret))
                for file in try FileManager.default.contentsOfDirectory(atPath: folder.url.path) {
                    let bytes = try Data(contentsOf: folder.url.appendingPathComponent(file))
                    #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file) holds a secret")
                }
            }
            // The journal does hold the calls, so the search above looked in the right place.
            let journal = try Data(contentsOf: folder.journal)
            #expect(journal.range(of: Data("/private".utf8)) != nil)
        }
        #expect(server.requests(to: "/private").count == 2)
        #expect(server.requests.allSatisfy { $0.header("Authorization") == Self.token })
        #expect(server.requests.allSatisfy { $0.header("X-Api-Key") == Self.apiKey })
    }

    @Test("S18: a redirect to another origin drops Authorization and secret headers; one on the same origin keeps them")
    func redirectsAcrossOrigins() async throws {
        let home = try LoopbackServer()
        let elsewhere = try LoopbackServer()
        defer {
            home.stop()
            elsewhere.stop()
        }
        home.setDefault("/same", .redirect(to: home.url("/landing")))
        home.setDefault("/away", .redirect(to: elsewhere.url("/landing"), status: 307))
        home.setDefault("/landing", .status(200, "home"))
        elsewhere.setDefault("/landing", .status(200, "elsewhere"))
        try await DataPoint.with(storage: .volatile) { point in
            point.register(HTTPExecutor(authorizer: Credentials()), for: .http)
            #expect(try await point.execute(HTTPCall(url: home.url("/same"))).rawString == "home")
            let away = try await point.execute(
                HTTPCall(method: .put, url: home.url("/away"), body: .data(Data("x".utf8))))
            #expect(away.rawString == "elsewhere")
            #expect(away.url == elsewhere.url("/landing"))
        }
        #expect(home.requests(to: "/landing").first?.header("Authorization") == Self.token)
        let crossed = try #require(elsewhere.requests(to: "/landing").first)
        #expect(crossed.header("Authorization") == nil)
        #expect(crossed.header("X-Api-Key") == nil)
        #expect(crossed.method == "PUT")
        #expect(crossed.body == Data("x".utf8))
    }

    @Test("S18: no cookie is kept from a response or taken from the shared store; a call sends only its own headers")
    func cookiesStayOut() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/login", LoopbackServer.Reply(headers: ["Set-Cookie": "session=from-response; Path=/"]))
        server.setDefault("/next", .status(200))
        let stored = try #require(
            HTTPCookie(properties: [
                .name: "stored", .value: "from-shared-store", .domain: "127.0.0.1", .path: "/",
            ]))
        HTTPCookieStorage.shared.setCookie(stored)
        defer { HTTPCookieStorage.shared.deleteCookie(stored) }
        try await DataPoint.with(storage: .volatile) { point in
            _ = try await point.execute(HTTPCall(url: server.url("/login")))
            _ = try await point.execute(HTTPCall(url: server.url("/next")))
            _ = try await point.execute(HTTPCall(url: server.url("/next"), headers: ["Cookie": "named=by-the-call"]))
        }
        let cookies = server.requests(to: "/next").map { $0.header("Cookie") }
        #expect(cookies == [nil, "named=by-the-call"])
        #expect(server.requests(to: "/login").first?.header("Cookie") == nil)
    }

    @Test(
        "Downloads run on the downloads sequence and land at their destination in one move; a failed one leaves nothing"
    )
    func downloads() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let content = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        server.setDefault("/archive", LoopbackServer.Reply(body: content))
        try await withTemporaryFolder { folder in
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
            let destination = folder.url.appendingPathComponent("archive.bin")
            let operation = try CallOperation.http(HTTPCall(url: server.url("/archive"), destination: destination))
            #expect(operation.sequenceName == .downloads)
            try await DataPoint.with(storage: .volatile) { point in
                let response = try await point.enqueue(operation).response
                #expect(response.file == destination)
                #expect(response.body.isEmpty)
                #expect(try Data(contentsOf: destination) == content)
                let attributes = try FileManager.default.attributesOfItem(atPath: destination.path)
                #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o600)

                let missing = folder.url.appendingPathComponent("missing.bin")
                let failed = try CallOperation.http(HTTPCall(url: server.url("/nothing"), destination: missing))
                await #expect(throws: RelayError.self) { _ = try await point.enqueue(failed).value }
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == ["archive.bin"])
        }
    }

    @Test("A large download streams to disk whole, and its size is what the response reports")
    func largeDownload() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let size = 24 * 1024 * 1024 + 7
        server.setDefault("/large", .zeros(count: size))
        try await withTemporaryFolder { folder in
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
            let destination = folder.url.appendingPathComponent("large.bin")
            try await DataPoint.with(storage: .volatile) { point in
                let handle = try await point.enqueue(
                    CallOperation.http(HTTPCall(url: server.url("/large"), destination: destination)))
                #expect(try await handle.response.status == 200)
                #expect((try await handle.status)?.metrics.bytesReceived == size)
            }
            let attributes = try FileManager.default.attributesOfItem(atPath: destination.path)
            #expect(attributes[.size] as? Int == size)
        }
    }

    @Test("A download whose destination is a folder fails at its first attempt, and sends nothing")
    func folderDestination() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/file", .zeros(count: 1024))
        try await withTemporaryFolder { folder in
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
            try await DataPoint.with(storage: .volatile) { point in
                let handle = try await point.enqueue(
                    CallOperation.http(HTTPCall(url: server.url("/file"), destination: folder.url)))
                let error = await #expect(throws: RelayError.self) { try await handle.value }
                #expect(error?.code == .operationFailed)
                #expect(error?.message.contains("is a folder") == true, "\(String(describing: error))")
                #expect((try await handle.status)?.attempts == 1)
            }
        }
        #expect(server.requests.isEmpty)
    }

    @Test("Uploads run on the uploads sequence and send the file's bytes")
    func uploads() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/upload", .status(204))
        try await withTemporaryFolder { folder in
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
            let file = folder.url.appendingPathComponent("report.csv")
            let content = Data(String(repeating: "a,b,c\n", count: 20_000).utf8)
            try content.write(to: file)
            let operation = try CallOperation.http(
                HTTPCall(method: .put, url: server.url("/upload"), body: .file(file)))
            #expect(operation.sequenceName == .uploads)
            let status = try await DataPoint.with(storage: .volatile) { point in
                try await point.enqueue(operation).response.status
            }
            #expect(status == 204)
        }
        let received = try #require(server.requests(to: "/upload").first)
        #expect(received.body.count == 120_000)
        #expect(received.header("Idempotency-Key") != nil)
    }

    @Test("S16/S18: executors given at open run every restored call; none starts on the built-in executor")
    func restoredCallsRunOnTheExecutorsGivenAtOpen() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/orders", .status(201))
        try await withTemporaryFolder { folder in
            // Stored by a DataPoint that never ran: all 32 are pending when the store reopens.
            let operations = try (0..<32).map { number in
                try CallOperation.http(
                    HTTPCall(method: .post, url: server.url("/orders"), body: .data(Data("{\"n\":\(number)}".utf8))))
            }
            let writer = try await DataPoint(storage: .file(at: folder.url))
            try await writer.enqueue(operations)
            try await writer.shutdown()

            let executors: [CallKind: any CallExecutor] = [.http: HTTPExecutor(authorizer: Credentials())]
            try await DataPoint.with(storage: .file(at: folder.url), executors: executors) { point in
                for operation in operations {
                    let response = try await point.handle(for: operation.id).response
                    #expect(response.status == 201)
                }
            }
        }
        #expect(server.requests(to: "/orders").count == 32)
        #expect(server.requests.allSatisfy { $0.header("Authorization") == Self.token })
    }

    @Test("S18: restored calls enqueued with an authorizer wait for one, however late the program registers it")
    func restoredCallsWaitForTheirAuthorizer() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/orders", .status(201))
        try await withTemporaryFolder { folder in
            let operations = try (0..<8).map { number in
                try CallOperation.http(
                    HTTPCall(method: .post, url: server.url("/orders"), body: .data(Data("{\"n\":\(number)}".utf8))))
            }
            // Enqueued where an authorizer authorizes HTTP calls, by a DataPoint that never ran.
            let executors: [CallKind: any CallExecutor] = [.http: HTTPExecutor(authorizer: Credentials())]
            let writer = try await DataPoint(storage: .file(at: folder.url), executors: executors)
            try await writer.enqueue(operations)
            try await writer.shutdown()

            // Reopened without it: the authorizer comes in the body, after the restored calls could have started.
            try await DataPoint.with(storage: .file(at: folder.url)) { point in
                for operation in operations {
                    #expect(try await point.status(of: operation.id)?.state == .pending(.authorizerNotRegistered))
                }
                #expect(server.requests.isEmpty)
                point.register(HTTPExecutor(authorizer: Credentials()), for: .http)
                for operation in operations {
                    let response = try await point.handle(for: operation.id).response
                    #expect(response.status == 201)
                }
            }
        }
        #expect(server.requests(to: "/orders").count == 8)
        #expect(server.requests.allSatisfy { $0.header("Authorization") == Self.token })
    }
}
