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

    /// The outcomes of those of `ids` that have ended.
    func outcomes(of ids: [UUID]) async throws -> [UUID: CallResult] {
        guard !ids.isEmpty else { return [:] }
        return try await Self.mapping("reading outcomes") {
            var outcomes: [UUID: CallResult] = [:]
            for (id, result) in try await read(
                "reading outcomes",
                "SELECT id, result FROM relay_operations WHERE id = ANY(\(ids)) AND state >= 3 AND result IS NOT NULL"
            ).map({ try $0.decode((UUID, ByteBuffer).self) }) {
                outcomes[id] = try CallResult(encoded: Data(result.readableBytesView))
            }
            return outcomes
        }
    }
}
