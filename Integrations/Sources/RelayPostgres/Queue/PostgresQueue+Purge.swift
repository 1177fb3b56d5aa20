import Foundation
import PostgresNIO
import Relay

extension PostgresQueue {
    /// Deletes finished operations now, with their dependency links, or none when one of them has not finished.
    ///
    /// - Returns: How many were deleted; ids the database does not hold are passed over.
    /// - Throws: ``RelayError/Code/operationUnfinished`` naming those that have not finished.
    func purge(_ ids: [UUID]) async throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try await Self.mapping("purging operations") {
            let rows = try await write(
                "purging operations",
                """
                WITH named AS (
                    SELECT id, state FROM relay_operations WHERE id = ANY(\(ids)) ORDER BY id FOR UPDATE
                ), unfinished AS (
                    SELECT id FROM named WHERE state < 3
                ), gone AS (
                    DELETE FROM relay_operations o USING named
                    WHERE o.id = named.id AND NOT EXISTS (SELECT 1 FROM unfinished)
                    RETURNING o.id
                ), unlinked AS (
                    DELETE FROM relay_dependencies d USING gone WHERE d.dependency = gone.id OR d.dependent = gone.id
                    RETURNING 1
                )
                SELECT coalesce((SELECT array_agg(id) FROM unfinished), '{}'), (SELECT count(*) FROM gone)
                """)
            let (unfinished, purged) = try rows.first?.decode(([UUID], Int64).self) ?? ([], Int64(0))
            guard unfinished.isEmpty else {
                throw RelayError(
                    .operationUnfinished,
                    "\(unfinished.count) of the operations to purge \(unfinished.count == 1 ? "has" : "have") not "
                        + "finished; nothing was purged", operationIDs: unfinished)
            }
            return Int(purged)
        }
    }
}
