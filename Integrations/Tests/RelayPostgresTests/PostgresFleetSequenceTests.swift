import Foundation
import PostgresNIO
import Relay
import RelayTesting
import Testing

@testable import RelayPostgres

/// Sequences registered and configured on a fleet: the database's configuration is the fleet's.
@Suite(
    "S28 sequences configured across a fleet", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetSequenceTests {
    private typealias Fleet = PostgresFleetTests

    /// The bunch sizes the database holds, by sequence.
    private static func bunchSizes(in database: String) async throws -> [String: Int] {
        try await TestDatabase.withClient(database: database) { client in
            var sizes: [String: Int] = [:]
            for try await (name, size) in try await client.query(
                "SELECT name, bunch_size FROM relay_sequences", logger: TestDatabase.logger
            ).decode((String, Int).self) {
                sizes[name] = size
            }
            return sizes
        }
    }

    @Test("S28: a process that opens leaves the fleet's default sequences as another process configured them")
    func openingKeepsConfiguration() async throws {
        try await TestDatabase.with { client, database in
            try await DataPoint.with(storage: PostgresFleetStorage(client: client, options: Fleet.options())) {
                point in
                try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
                try await #require(point.sequence(named: .downloads)).setBunchSize(3)
                // A second process, which configures nothing (as the `relay` command does), opens and closes.
                let runsData = try await TestDatabase.withClient(database: database) { other in
                    try await DataPoint.with(storage: PostgresFleetStorage(client: other, options: Fleet.options())) {
                        other in
                        await other.sequence(named: .data)?.bunchSize
                    }
                }
                #expect(runsData == 8, "it runs them as the fleet configured them")
                let sizes = try await Self.bunchSizes(in: database)
                #expect(sizes["data"] == 8)
                #expect(sizes["downloads"] == 3)
                #expect(sizes["uploads"] == 1, "registered by the first process that opened, as one process has it")
            }
        }
    }

    @Test("S28/S31: a sequence the database cannot register in time is registered nowhere, and the call says so")
    func registrationGivenUp() async throws {
        var options = Fleet.options()
        options.deadline = .seconds(1)
        try await TestDatabase.with { [options] client, database in
            try await DataPoint.with(
                storage: PostgresFleetStorage(client: client, options: options),
                executors: [Fleet.work: Fleet.runner("A")]
            ) { point in
                // Another session holds the sequences' table past the deadline.
                try await TestDatabase.withClient(database: database) { blocker in
                    try await blocker.withConnection { session in
                        _ = try await session.query("BEGIN", logger: TestDatabase.logger)
                        _ = try await session.query(
                            "LOCK TABLE relay_sequences IN EXCLUSIVE MODE", logger: TestDatabase.logger)
                        let refused = await #expect(throws: RelayError.self) {
                            try await point.upsertCallSequence(CallSequence(name: Fleet.left, bunchSize: 2))
                        }
                        #expect(refused?.code == .storageFailure, "\(String(describing: refused))")
                        #expect(point.sequence(named: Fleet.left) == nil, "not registered in this process either")
                        let data = try #require(point.sequence(named: .data))
                        let resized = await #expect(throws: RelayError.self) { try await data.setBunchSize(5) }
                        #expect(resized?.code == .storageFailure)
                        _ = try await session.query("ROLLBACK", logger: TestDatabase.logger)
                    }
                }
                #expect(try await Self.bunchSizes(in: database)["data"] == 1, "the bunch size did not change")
                // Once the database answers, the same sequence registers, and its work runs.
                let left = try CallSequence(name: Fleet.left, bunchSize: 2)
                try await Fleet.register(left, on: point)
                #expect(try await Self.bunchSizes(in: database)[Fleet.left.rawValue] == 2)
                let value = try await PostgresFleetOutageTests.enqueue(
                    [CallOperation(kind: Fleet.work, sequenceName: Fleet.left)], on: point)[0].value
                #expect(value == Data("A".utf8))
            }
        }
    }
}
