import Foundation
import Logging
import Measuring
import PostgresNIO

/// P13's baseline: a queue written directly over postgres-nio, as most services write one.
///
/// Each worker claims one row with `FOR UPDATE SKIP LOCKED` and completes it, deleting it, in the same transaction;
/// no leases, retries or wake-ups.
enum SQLQueue {
    static let logger = Logger(label: "SQLQueue")

    static func create(on client: PostgresClient) async throws {
        try await client.query(
            "CREATE TABLE jobs (id bigserial PRIMARY KEY, state smallint NOT NULL DEFAULT 0, body bytea NOT NULL)")
        try await client.query("CREATE INDEX jobs_waiting ON jobs (id) WHERE state = 0")
    }

    /// Enqueues `count` jobs in one statement, then runs them with `workers` workers; returns the time of both.
    static func run(_ count: Int, workers: Int, on client: PostgresClient) async throws -> Duration {
        try await timed {
            try await client.query(
                "INSERT INTO jobs (body) SELECT '\\x00'::bytea FROM generate_series(1, \(count))")
            try await withThrowingDiscardingTaskGroup { group in
                for _ in 0..<workers {
                    group.addTask { while try await runOne(on: client) {} }
                }
            }
        }
    }

    /// Claims one job and completes it, in one transaction; returns whether there was one.
    private static func runOne(on client: PostgresClient) async throws -> Bool {
        try await client.withTransaction(logger: logger) { connection in
            var claimed: Int64?
            for try await id in try await connection.query(
                "SELECT id FROM jobs WHERE state = 0 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED", logger: logger
            ).decode(Int64.self) {
                claimed = id
            }
            guard let claimed else { return false }
            try await connection.query("DELETE FROM jobs WHERE id = \(claimed)", logger: logger)
            return true
        }
    }
}
