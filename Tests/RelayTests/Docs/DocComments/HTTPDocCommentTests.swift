import Foundation
import Relay
import RelayTesting
import Testing

/// The examples in the doc comments of HTTP calls, their responses and failures, as they read there (see
/// `SnippetTests`).
@Suite("Doc comment examples: HTTP", .timeLimit(.minutes(3)))
struct HTTPDocCommentTests {
    struct User: Codable, Equatable {
        let name: String
    }

    struct Problem: Codable {
        let title: String
    }

    actor TokenStore {
        func current() async throws -> String { "secret-token" }
    }

    struct BearerToken: RequestAuthorizer {
        let tokens: TokenStore
        func authorize(_ request: inout CallRequest, for operation: CallOperation) async throws {
            request.setSecretHeader("Authorization", "Bearer \(try await tokens.current())")
        }
    }

    private static func withServer(_ body: (DataPoint, LoopbackServer) async throws -> Void) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        try await DataPoint.testing { point, _ in try await body(point, server) }
    }

    @Test("a call with every field, and a response decoded")
    func callAndResponse() async throws {
        try await Self.withServer { point, server in
            server.script("/orders", [.json(#"{"id": 7}"#, status: 201)])
            server.script("/user/42", [.json(#"{"name": "Ada"}"#)])
            let api = server.baseURL
            let call = HTTPCall(
                method: .post,
                url: api.appending(path: "orders"),
                headers: ["Content-Type": "application/json"],
                body: .data(Data(#"{"sku": "A-1"}"#.utf8)),
                timeout: .milliseconds(300)
            )
            do {
                let response = try await point.execute(call)
                #expect(response.status == 201)
            }
            #expect(server.requests(to: "/orders").first?.body == Data(#"{"sku": "A-1"}"#.utf8))

            let response = try await point.execute(HTTPCall(url: server.url("/user/42")))
            print(response.status, response.prettyContent)
            let user = try response.decode(User.self)
            #expect(user == User(name: "Ada"))

            let usersURL = server.url("/users")
            server.script("/users/42", [.json(#"{"name": "Grace"}"#)])
            do {
                let user = try await point.execute(HTTPCall(url: usersURL.appending(path: "42")), as: User.self)
                #expect(user == User(name: "Grace"))
            }
        }
    }

    @Test("a call on a sequence of its own")
    func onSequence() async throws {
        try await Self.withServer { point, server in
            let hook = server.url("/hook")
            let payload = Data("ping".utf8)
            server.script("/hook", [.status(200, "pong")])
            try await point.upsertCallSequence(CallSequence(name: "webhooks", bunchSize: 32))
            let call = HTTPCall(method: .post, url: hook, body: .data(payload))
            let response = try await point.execute(call, on: "webhooks")
            print(response.status, response.rawString)
            #expect(response.rawString == "pong")
            let listed = try point.operations(OperationQuery(sequence: "webhooks"))
            #expect(listed.statuses.count == 1)
        }
    }

    @Test("an upload from a file runs on the uploads sequence")
    func upload() async throws {
        try await Self.withServer { point, server in
            let folder = TemporaryFolder()
            defer { folder.remove() }
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
            let report = folder.url.appending(path: "report.csv")
            try Data("a,b\n1,2\n".utf8).write(to: report)
            let target = server.url("/reports/1")
            let upload = try CallOperation.http(HTTPCall(method: .put, url: target, body: .file(report)))
            try await point.enqueue(upload)  // runs on the uploads sequence
            #expect(upload.sequenceName == .uploads)
            try await point.idle()
            #expect(server.requests(to: "/reports/1").first?.body == Data("a,b\n1,2\n".utf8))
        }
    }

    @Test("credentials added at send time, with a store of one's own")
    func authorizer() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/me", [.json(#"{"name": "Ada"}"#)])
        let temporary = TemporaryFolder()
        defer { temporary.remove() }
        let folder = temporary.url
        let clock = ContinuousClock()
        let tokens = TokenStore()
        let point = try await DataPoint(
            storage: .file(at: folder), clock: clock,
            executors: [.http: HTTPExecutor(authorizer: BearerToken(tokens: tokens), clock: clock)])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await point.run() }
            _ = try await point.execute(HTTPCall(url: server.url("/me")))
            try await point.shutdown()
        }
        #expect(server.requests(to: "/me").first?.header("Authorization") == "Bearer secret-token")
    }

    @Test("a failure keeps its cause and its response")
    func failures() async throws {
        try await Self.withServer { point, server in
            server.script("/orders", [.json(#"{"title": "out of stock"}"#, status: 422)])
            let handle = try await point.enqueue(CallOperation.http(HTTPCall(url: server.url("/orders"))))
            var banner: String?
            func showBanner(_ text: String) { banner = text }
            if case .failed(let failure) = try await handle.outcome, failure.cause == .offlineTooLong {
                showBanner("The server could not be reached")
            }
            #expect(banner == nil)
            var title: String?
            if case .failed(let failure) = try await handle.outcome, let response = failure.response {
                let problem = try response.decode(Problem.self)
                title = problem.title
            }
            #expect(title == "out of stock")
        }
    }
}
