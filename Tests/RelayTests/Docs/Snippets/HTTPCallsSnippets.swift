import Foundation
import Relay

// The code of the "HTTP Calls" article, line for line, compiled with the tests (see SnippetTests); what it leaves
// out comes in as parameters. HTTPTests and HTTPRetryTests run the same calls against a loopback server.

enum HTTPCallsSnippets {
    struct User: Decodable {}
    struct Problem: Decodable {}
    struct NewOrder: Encodable {}

    protocol TokenStore: Sendable {
        func current() async throws -> String
    }

    static func webhooks(_ point: DataPoint, hook: URL, event: Data) async throws {
        try await point.upsertCallSequence(CallSequence(name: "webhooks", bunchSize: 32))
        let delivered = try await point.execute(HTTPCall(method: .post, url: hook, body: .data(event)), on: "webhooks")
        _ = delivered
    }

    static func health(folder: URL) async throws {
        try await DataPoint.with(storage: .file(at: folder)) { point in
            let health = try await point.execute(HTTPCall(url: URL(string: "https://api.example.com/health")!))
            print(health.status, health.prettyContent)
        }
    }

    static func order(_ point: DataPoint, newOrder: NewOrder) async throws -> CallHandle {
        let order = try CallOperation.http(
            HTTPCall(
                method: .post,
                url: URL(string: "https://api.example.com/orders")!,
                headers: ["Content-Type": "application/json"],
                body: .data(try JSONEncoder().encode(newOrder)),
                timeout: .milliseconds(800)
            ),
            retryPolicy: RetryPolicy(maximumAttempts: 8, maximumElapsed: .seconds(600))
        )
        let handle = try await point.enqueue(order)
        return handle
    }

    static func responses(_ point: DataPoint, handle: CallHandle, userURL: URL) async throws {
        let response = try await handle.response
        let user = try await point.execute(HTTPCall(url: userURL), as: User.self)
        _ = (response, user)
        if case .failed(let failure) = try await handle.outcome, let response = failure.response {
            let problem = try response.decode(Problem.self)
            _ = problem
        }
    }

    struct BearerToken: RequestAuthorizer {
        let tokens: TokenStore
        func authorize(_ request: inout CallRequest, for operation: CallOperation) async throws {
            request.setSecretHeader("Authorization", "Bearer \(try await tokens.current())")
        }
    }

    static func credentials(folder: URL, clock: some Clock<Duration>, tokens: some TokenStore) async throws {
        let point = try await DataPoint(
            storage: .file(at: folder), clock: clock,
            executors: [.http: HTTPExecutor(authorizer: BearerToken(tokens: tokens), clock: clock)])
        try await point.shutdown()
    }

    static func observe(_ point: DataPoint, order: CallOperation, log: (String) -> Void) async throws {
        let handle = try await point.enqueue(order)
        for await event in try point.events(for: handle.id) {
            if let report = event.kind.report {
                log("attempt \(report.attempt): \(report.httpStatus.map(String.init) ?? report.error ?? "")")
            } else if event.kind.isCompleted, let metrics = event.kind.metrics {
                log("done in \(metrics.runTime), headers after \(metrics.timeToResponseHeaders ?? .zero)")
            }
        }
    }
}
