import Foundation
import NIOCore
import PostgresNIO
import Relay

extension PostgresQueue {
    /// Cancels an operation from any process: one that waits (blocked or pending) ends cancelled at once, in the same
    /// transaction as its dependents, which are cancelled or released as a failure's are; one that runs is marked for
    /// its owner, told on ``cancelChannel``, to cancel its attempt, and is recorded cancelled by whichever process
    /// claims it next if that attempt's lease expires first.
    ///
    /// - Returns: Whether anything changed: `false` for an operation that ended, or whose cancellation was already
    ///   asked for.
    /// - Throws: ``RelayError/Code/unknownOperation`` when the database holds no such operation.
    func cancel(_ id: UUID) async throws -> Bool {
        let result = ByteBuffer(bytes: CallResult.cancelled(.requested).encoded())
        return try await transaction("cancelling \(id)") { connection in
            let found = try await rows(
                "SELECT state, cancel_requested FROM relay_operations WHERE id = \(id) FOR UPDATE", on: connection)
            guard let row = found.first else {
                throw RelayError(
                    .unknownOperation, "cannot cancel \(id): no such operation is known", operationIDs: [id])
            }
            let (state, requested) = try row.decode((Int16, Bool).self)
            switch PostgresOperationState(rawValue: state) {
            case .blocked, .pending:
                _ = try await rows(
                    """
                    UPDATE relay_operations
                    SET state = \(PostgresOperationState.cancelled.rawValue), blockers = 0, result = \(result),
                        available_at = NULL, finished_at = now()
                    WHERE id = \(id)
                    """, on: connection)
                try await passOn([.cancelled: [id]], on: connection)
                return true
            case .running where !requested:
                _ = try await rows(
                    """
                    UPDATE relay_operations SET cancel_requested = true WHERE id = \(id)
                    RETURNING pg_notify(\(Self.cancelChannel), upper(id::text))
                    """, on: connection)
                return true
            default:
                return false
            }
        }
    }

    /// The operations `owner` runs whose cancellation a process asked for; a backstop for a notification missed.
    func cancellationsRequested(owner: UUID) async throws -> [UUID] {
        try await Self.mapping("reading cancellations") {
            try await read(
                "reading cancellations",
                "SELECT id FROM relay_operations WHERE state = 2 AND owner = \(owner) AND cancel_requested"
            ).map { try $0.decode(UUID.self) }
        }
    }
}
