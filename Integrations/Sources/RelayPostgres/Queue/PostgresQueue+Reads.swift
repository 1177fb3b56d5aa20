import Foundation
import NIOCore
import PostgresNIO
import Relay

extension PostgresQueue {
    /// What the database holds of one operation.
    struct Stored: Sendable, Hashable {
        let state: PostgresOperationState
        let attempts: Int
        let owner: UUID?
        let result: CallResult?
    }

    /// The stored state of operation `id`, or `nil` when it is not stored.
    func stored(_ id: UUID) async throws -> Stored? {
        try await Self.mapping("reading operation \(id)") {
            var found: Stored?
            for (state, attempts, owner, result) in try await read(
                "reading operation \(id)",
                "SELECT state, attempts, owner, result FROM relay_operations WHERE id = \(id)"
            ).map({ try $0.decode((Int16, Int32, UUID?, ByteBuffer?).self) }) {
                guard let state = PostgresOperationState(rawValue: state) else {
                    throw RelayError(.corruptStore, "operation \(id) has state \(state), which no Relay writes")
                }
                found = Stored(
                    state: state, attempts: Int(attempts), owner: owner,
                    result: try result.map { try CallResult(encoded: Data($0.readableBytesView)) })
            }
            return found
        }
    }

    /// Operation `id` as the database holds it, with its outcome once it has one, or `nil` when it is not stored.
    func operation(_ id: UUID) async throws -> StoredOperation? {
        try await Self.mapping("reading operation \(id)") {
            var found: StoredOperation?
            for (body, snapshot, attempts, enqueuedAt, startedAt, finishedAt, state, result) in try await read(
                "reading operation \(id)",
                """
                SELECT body, snapshot, attempts, enqueued_at, started_at, finished_at, state,
                    CASE WHEN state >= 3 THEN result END
                FROM relay_operations WHERE id = \(id)
                """
            ).map({ try $0.decode((ByteBuffer, Int64, Int32, Date, Date?, Date?, Int16, ByteBuffer?).self) }) {
                guard PostgresOperationState(rawValue: state) != nil else {
                    throw RelayError(.corruptStore, "operation \(id) has state \(state), which no Relay writes")
                }
                found = StoredOperation(
                    operation: try CallOperation(encoded: Data(body.readableBytesView)),
                    snapshot: UInt64(snapshot), attempts: Int(attempts), enqueuedAt: enqueuedAt,
                    firstStartedAt: startedAt,
                    result: try result.map { try CallResult(encoded: Data($0.readableBytesView)) },
                    finishedAt: finishedAt)
            }
            return found
        }
    }

    /// The outcomes of those of `ids` that have ended, and those of `ids` the database does not hold.
    ///
    /// An absent operation is one whose commit is not committed yet, or never will be: see
    /// ``neverCommitted(_:)``.
    func outcomes(of ids: [UUID]) async throws -> (outcomes: [UUID: CallResult], absent: [UUID]) {
        guard !ids.isEmpty else { return ([:], []) }
        return try await Self.mapping("reading outcomes") {
            var outcomes: [UUID: CallResult] = [:]
            var present: Set<UUID> = []
            for (id, result) in try await read(
                "reading outcomes",
                "SELECT id, CASE WHEN state >= 3 THEN result END FROM relay_operations WHERE id = ANY(\(ids))"
            ).map({ try $0.decode((UUID, ByteBuffer?).self) }) {
                present.insert(id)
                if let result { outcomes[id] = try CallResult(encoded: Data(result.readableBytesView)) }
            }
            return (outcomes, ids.filter { !present.contains($0) })
        }
    }

    /// Those of `ids`, operations whose commits returned, that the database does not hold although no commit is in
    /// flight: their commits joined a transaction of the application's that rolled back (S30).
    ///
    /// Every commit holds the counters' row until its transaction ends. Once this transaction holds that row, every
    /// commit that took a number before it has ended, and the statement after it sees what they committed; when
    /// another transaction holds the row, nothing is judged, and the next look tries again.
    func neverCommitted(_ ids: [UUID]) async throws -> [UUID] {
        guard !ids.isEmpty else { return [] }
        return try await transaction("looking up commits that rolled back") { connection in
            guard !(try await rows("SELECT 1 FROM relay_counters FOR UPDATE SKIP LOCKED", on: connection).isEmpty)
            else { return [] }
            var present: Set<UUID> = []
            for id in try await rows(
                "SELECT id FROM relay_operations WHERE id = ANY(\(ids))", on: connection
            ).map({ try $0.decode(UUID.self) }) {
                present.insert(id)
            }
            return ids.filter { !present.contains($0) }
        }
    }
}
