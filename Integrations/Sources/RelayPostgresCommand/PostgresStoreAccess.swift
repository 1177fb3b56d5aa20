import Foundation
import PostgresNIO
import Relay
import RelayCommandLine
import RelayPostgres

/// A fleet's database that `--store` names, `postgres://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=MODE`.
struct PostgresStoreAccess: Sendable {
    let configuration: PostgresClient.Configuration

    init(_ url: URL) throws {
        guard let parts = URLComponents(url: url, resolvingAgainstBaseURL: false), let host = parts.host,
            !host.isEmpty
        else {
            throw RelayError(.storageFailure, "a database's URL names its host: postgres://USER@HOST:PORT/DATABASE")
        }
        let database = String(parts.path.drop { $0 == "/" })
        let user = parts.user ?? ProcessInfo.processInfo.environment["USER"] ?? "postgres"
        let tls: PostgresClient.Configuration.TLS
        switch parts.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "disable" {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require": tls = .require(.makeClientConfiguration())
        case let mode: throw RelayError(.storageFailure, "sslmode takes disable, prefer or require, not \(mode)")
        }
        // The password may come from the environment, as libpq's tools take it, rather than the command line.
        let password = parts.password ?? ProcessInfo.processInfo.environment["PGPASSWORD"]
        configuration = PostgresClient.Configuration(
            host: host, port: parts.port ?? 5432, username: user, password: password,
            database: database.isEmpty ? user : database, tls: tls)
    }

    /// How long a command waits for the database: a person waits for its answer.
    static let deadline = Duration.seconds(10)

    /// Runs `body` with the queries of the `relay` command, answered by the database.
    func withQueries(_ body: @Sendable (any StoreQueries) async throws -> Int32) async throws -> Int32 {
        try await withClient { client in try await body(Queries(client: client)) }
    }

    /// The `relay` command's questions, each one statement or snapshot of the database.
    private struct Queries: StoreQueries {
        let client: PostgresClient

        func metrics() async throws -> MetricsSnapshot {
            try await PostgresFleetStorage.metrics(of: client, window: 0, deadline: PostgresStoreAccess.deadline)
        }

        func operations(_ query: OperationQuery) async throws -> StoredPage {
            let page = try await PostgresFleetStorage.storedOperations(
                query, of: client, deadline: PostgresStoreAccess.deadline)
            return StoredPage(operations: page.operations, running: page.running, next: page.next)
        }

        func operations(withIDPrefix prefix: String, limit: Int) async throws -> StoredPage {
            let found = try await PostgresFleetStorage.storedOperations(
                withIDPrefix: prefix, of: client, limit: limit, deadline: PostgresStoreAccess.deadline)
            return StoredPage(operations: found.operations, running: found.running, next: nil)
        }
    }

    /// Runs `body` with a DataPoint on the database that runs nothing: it claims no operation.
    func withDataPoint(_ body: @Sendable (DataPoint) async throws -> Int32) async throws -> Int32 {
        try await withClient { client in
            var options = PostgresFleetStorage.Options()
            options.deadline = Self.deadline
            options.claims = false
            return try await DataPoint.with(storage: PostgresFleetStorage(client: client, options: options)) { point in
                try await body(point)
            }
        }
    }

    private func withClient<Result: Sendable>(
        _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        let client = PostgresClient(configuration: configuration)
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}
