import Foundation
import Logging
import PostgresNIO
import Testing

/// A database of its own for one test, on the PostgreSQL server that `RELAY_POSTGRES_URL` names
/// (`postgres://USER@HOST:PORT/DATABASE`), dropped when the test ends.
///
/// CI starts a server and sets the variable; elsewhere the tests that need it are skipped when it is not set, which the
/// test run reports. Tests never stand in for the database.
struct TestDatabase {
    /// The server's address, from the environment.
    static let url: URL? = ProcessInfo.processInfo.environment["RELAY_POSTGRES_URL"].flatMap(URL.init(string:))

    /// Whether the tests that need a server run: where one is named, and always in CI, which starts one.
    static var isAvailable: Bool { url != nil || ProcessInfo.processInfo.environment["CI"] != nil }

    static let logger = Logger(label: "RelayPostgresTests")

    /// The connections each client of a test may open.
    static let maximumConnections = 6

    /// A client's configuration for `database` on the server.
    static func configuration(database: String) throws -> PostgresClient.Configuration {
        let url = try #require(url, "set RELAY_POSTGRES_URL to a PostgreSQL server, postgres://USER@HOST:PORT/DATABASE")
        var configuration = PostgresClient.Configuration(
            host: url.host ?? "127.0.0.1", port: url.port ?? 5432, username: url.user ?? "postgres",
            password: url.password, database: database, tls: .disable)
        // Tests run side by side on a small machine, creating and dropping databases: a connection may take seconds.
        configuration.options.connectTimeout = .seconds(15)
        // Tests run side by side, several processes' pools each: a small pool each keeps them all within the
        // server's connection limit, as a fleet's replicas must be.
        configuration.options.maximumConnections = TestDatabase.maximumConnections
        return configuration
    }

    /// A single connection's configuration for `database` on the server, as a store takes.
    static func connectionConfiguration(database: String) throws -> PostgresConnection.Configuration {
        let client = try configuration(database: database)
        return PostgresConnection.Configuration(
            host: client.host ?? "127.0.0.1", port: client.port ?? 5432, username: client.username,
            password: client.password, database: database, tls: .disable)
    }

    /// Runs `body` with a client of a new, empty database; the database is dropped afterwards.
    static func with<Result: Sendable>(
        _ body: @Sendable (PostgresClient, String) async throws -> Result
    ) async throws -> Result {
        let name = "relay_test_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
        let administrative = url?.path.split(separator: "/").first.map(String.init) ?? "postgres"
        _ = try await described {
            try await withClient(database: administrative) { admin in
                try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
            }
        }
        do {
            let result = try await described { try await withClient(database: name) { try await body($0, name) } }
            try await described { try await drop(name, from: administrative) }
            return result
        } catch {
            try? await drop(name, from: administrative)
            throw error
        }
    }

    /// What a test's database failed with, in full: postgres-nio describes its errors generically.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The value of `body`, or its error, with a driver's error described in full.
    private static func described<Result>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch let error as PSQLError {
            throw Failure(description: String(reflecting: error))
        }
    }

    /// Runs `body` with a running client of `database`; the client stops when `body` returns.
    @discardableResult
    static func withClient<Result: Sendable>(
        database: String,
        _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        let client = PostgresClient(configuration: try configuration(database: database))
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

    private static func drop(_ name: String, from administrative: String) async throws {
        try await withClient(database: administrative) { admin in
            try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
        }
    }
}
