import Foundation
import NIOCore
import PostgresNIO
import Relay

extension PostgresQueue {
    /// Every operation the database holds, oldest commit first, with the sequences and suspensions: what the fleet's
    /// store holds, read in one snapshot of the database while the fleet runs; and the operations that run now.
    ///
    /// A database that Relay has not set up holds nothing, which this says without creating anything.
    func contents() async throws -> (state: StoredState, running: Set<UUID>) {
        try await Self.mapping("reading the store") {
            try await transaction("reading the store") { connection in
                // One snapshot for every statement: an operation that ends meanwhile is counted once.
                _ = try await rows("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", on: connection)
                let found = try await rows("SELECT to_regclass('relay_operations') IS NOT NULL", on: connection)
                guard try found.first?.decode(Bool.self) == true else { return (StoredState.empty, []) }
                var operations: [StoredOperation] = []
                var running: Set<UUID> = []
                for row in try await rows(
                    """
                    SELECT body, snapshot, attempts, enqueued_at, started_at, finished_at, state,
                        CASE WHEN state >= 3 THEN result END,
                        CASE WHEN state = 1 AND attempts > 0 AND available_at > now() THEN available_at END,
                        CASE WHEN held_until > now() THEN held_until END
                    FROM relay_operations ORDER BY snapshot, ordinal
                    """, on: connection)
                {
                    let (body, snapshot, attempts, enqueuedAt, startedAt, finishedAt, state, result, retryAt, held) =
                        try row.decode(
                            (ByteBuffer, Int64, Int32, Date, Date?, Date?, Int16, ByteBuffer?, Date?, Date?).self)
                    let operation = try CallOperation(encoded: Data(body.readableBytesView))
                    guard let phase = PostgresOperationState(rawValue: state) else {
                        throw RelayError(
                            .corruptStore, "operation \(operation.id) has state \(state), which no Relay writes")
                    }
                    if phase == .running { running.insert(operation.id) }
                    operations.append(
                        StoredOperation(
                            operation: operation, snapshot: UInt64(snapshot), attempts: Int(attempts),
                            enqueuedAt: enqueuedAt, firstStartedAt: startedAt,
                            result: try result.map { try CallResult(encoded: Data($0.readableBytesView)) },
                            finishedAt: finishedAt, retryAt: retryAt, holds: held.map { [nil: $0] } ?? [:]))
                }
                var sequences: [StoredSequence] = []
                for (name, bunchSize, commitGraph, suspensions) in try await rows(
                    "SELECT name, bunch_size, commit_graph, suspensions FROM relay_sequences ORDER BY name",
                    on: connection
                ).map({ try $0.decode((String, Int32, Bool, Int32).self) }) {
                    sequences.append(
                        StoredSequence(
                            name: CallSequence.Name(rawValue: name), bunchSize: Int(bunchSize),
                            algorithm: commitGraph ? .commitGraph : .flat, suspensionCount: Int(suspensions)))
                }
                let counters = try await rows("SELECT snapshot, suspensions FROM relay_counters", on: connection)
                var (snapshot, suspensions): (Int64, Int32) = (0, 0)
                if let row = counters.first { (snapshot, suspensions) = try row.decode((Int64, Int32).self) }
                let state = StoredState(
                    lastSnapshot: UInt64(snapshot), operations: operations, sequences: sequences,
                    suspensionCount: Int(suspensions))
                return (state, running)
            }
        }
    }
}

extension PostgresQueue {
    /// How many operations the database holds in each state, of `sequence` when given.
    ///
    /// States with none are left out. A database that Relay has not set up holds none, which this says without
    /// creating anything.
    func operationCounts(sequence: CallSequence.Name?) async throws -> [OperationQuery.State: Int] {
        let name = sequence?.rawValue
        return try await Self.mapping("counting operations") {
            let found = try await read("counting operations", "SELECT to_regclass('relay_operations') IS NOT NULL")
            guard try found.first?.decode(Bool.self) == true else { return [:] }
            var counts: [OperationQuery.State: Int] = [:]
            for row in try await read(
                "counting operations",
                """
                SELECT state, count(*) FROM relay_operations
                WHERE \(name)::text IS NULL OR sequence = \(name)::text GROUP BY state
                """)
            {
                let (state, count) = try row.decode((Int16, Int64).self)
                guard let phase = PostgresOperationState(rawValue: state) else {
                    throw RelayError(.corruptStore, "\(count) operations have state \(state), which no Relay writes")
                }
                counts[phase.queryState, default: 0] += Int(count)
            }
            return counts
        }
    }
}
