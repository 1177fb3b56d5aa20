import Foundation
import Logging
import PostgresNIO

/// The PostgreSQL server that `RELAY_POSTGRES_URL` names, and a database of its own for each run.
struct FleetServer: Sendable {
    let host: String
    let port: Int
    let username: String
    let password: String?
    let administrative: String

    /// The server the environment names, or `nil` when it names none.
    init?() {
        guard let value = ProcessInfo.processInfo.environment["RELAY_POSTGRES_URL"], let url = URL(string: value)
        else { return nil }
        host = url.host ?? "127.0.0.1"
        port = url.port ?? 5432
        username = url.user ?? "postgres"
        password = url.password
        administrative = url.path.split(separator: "/").first.map(String.init) ?? "postgres"
    }

    /// A client's configuration for `database`.
    func configuration(_ database: String) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: .disable)
        configuration.options.maximumConnections = 20
        return configuration
    }

    /// Runs `body` with a running client of `database`.
    func withClient<Result: Sendable>(
        _ database: String, _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        let client = PostgresClient(configuration: configuration(database))
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

    /// Runs `body` with a client of a new database, dropped afterwards; refuses a server that does not wait for its
    /// log to be flushed before it answers a commit, which the goals assume.
    func withDatabase<Result: Sendable>(
        _ body: @Sendable (PostgresClient, String) async throws -> Result
    ) async throws -> Result {
        let name = "relay_bench_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
        try await withClient(administrative) { admin in
            for try await setting in try await admin.query("SHOW synchronous_commit").decode(String.self)
            where setting != "on" {
                throw FleetServerError(description: "synchronous_commit is \(setting); the fleet's goals assume on")
            }
            try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        }
        do {
            let result = try await withClient(name) { try await body($0, name) }
            try await drop(name)
            return result
        } catch {
            try? await drop(name)
            throw error
        }
    }

    /// ``withDatabase(_:)`` for a body that needs only the client.
    func withDatabase<Result: Sendable>(
        _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        try await withDatabase { client, _ in try await body(client) }
    }

    private func drop(_ name: String) async throws {
        _ = try await withClient(administrative) { admin in
            try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
        }
    }
}

/// A server that does not suit the benchmarks.
struct FleetServerError: Error, CustomStringConvertible {
    let description: String
}
