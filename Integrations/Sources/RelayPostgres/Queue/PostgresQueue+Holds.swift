import Foundation
import NIOCore
import PostgresNIO
import Relay

extension PostgresQueue {
    /// Sets or releases one context's hold on an operation, from any process: no process claims it until the latest
    /// of its holds has passed (S10 across the fleet).
    ///
    /// A hold on an operation that runs applies when it waits again: after its lease expires, say.
    ///
    /// - Parameters:
    ///   - id: The operation.
    ///   - until: When the hold ends, or `nil` to release the context's hold.
    ///   - context: The hold's context; holds of different contexts combine.
    ///   - origin: The process that announces the hold itself, whose follower of the event log passes over it.
    /// - Throws: ``RelayError/Code/unknownOperation`` when the database holds no such operation,
    ///   ``RelayError/Code/operationFinished`` when it has ended.
    func hold(_ id: UUID, until: Date?, context: String?, origin: UUID? = nil) async throws {
        // `-` for no context and `+` before a context keep the two apart.
        let key = context.map { "+" + $0 } ?? "-"
        let end = until?.timeIntervalSince1970
        try await transaction("holding \(id)") { connection in
            let found = try await rows(
                "SELECT state FROM relay_operations WHERE id = \(id) FOR UPDATE", on: connection)
            guard let row = found.first else {
                throw RelayError(.unknownOperation, "cannot hold \(id): no such operation is known", operationIDs: [id])
            }
            guard let state = PostgresOperationState(rawValue: try row.decode(Int16.self)), !state.isTerminal else {
                throw RelayError(.operationFinished, "cannot hold \(id): it has finished", operationIDs: [id])
            }
            // A hold released or moved earlier may let the operation be claimed now: claimers are told.
            _ = try await rows(
                """
                WITH changed AS (
                    SELECT CASE WHEN \(end)::float8 IS NULL THEN holds - \(key)::text
                        ELSE holds || jsonb_build_object(\(key)::text, \(end)::float8) END AS holds
                    FROM relay_operations WHERE id = \(id)
                ), updated AS (
                    UPDATE relay_operations o
                    SET holds = changed.holds,
                        held_until = (SELECT max(to_timestamp(value::float8)) FROM jsonb_each_text(changed.holds))
                    FROM changed WHERE o.id = \(id)
                    RETURNING o.state, o.held_until
                )
                SELECT pg_notify(\(Self.readyChannel), '') FROM updated
                WHERE state = \(PostgresOperationState.pending.rawValue) AND (held_until IS NULL OR held_until <= now())
                """, on: connection)
            _ = try await rows(
                """
                WITH logged AS (
                    INSERT INTO relay_events (
                        origin, operation, sequence, kind, attempts, snapshot, enqueued_at, reason, held_until)
                    SELECT \(origin), id, sequence, \(Self.heldEvent), attempts, snapshot, enqueued_at, \(context),
                        to_timestamp(\(end)::float8)
                    FROM relay_operations WHERE id = \(id)
                    RETURNING 1
                )
                SELECT pg_notify(\(Self.eventsChannel), '') FROM logged
                """, on: connection)
        }
    }
}
