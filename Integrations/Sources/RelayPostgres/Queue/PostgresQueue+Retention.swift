import Foundation
import PostgresNIO
import Relay

extension PostgresQueue {
    /// Deletes the finished operations that `retention` no longer keeps, with their dependency links: those past
    /// their window, and the oldest past the most kept of their class (completed and skipped ones, or dead letters:
    /// failed and cancelled ones), at most `limit` of each kind at once.
    ///
    /// Every process of a fleet prunes on its leases' cadence; two that prune at once delete each row once. A handle
    /// asked for later of a pruned operation fails with ``RelayError/Code/unknownOperation``, as on any store.
    ///
    /// - Returns: How many operations were deleted.
    @discardableResult
    func prune(_ retention: RetentionPolicy, limit: Int = 10_000) async throws -> Int {
        let window = Self.seconds(retention.window)
        let deadLetterWindow = Self.seconds(retention.deadLetterWindow)
        let kept = Int64(clamping: retention.maximumOperations)
        let deadLettersKept = Int64(clamping: retention.maximumDeadLetters)
        let limit = Int64(limit)
        return try await Self.mapping("pruning finished operations") {
            let rows = try await write(
                "pruning finished operations",
                """
                WITH expired AS (
                    (SELECT id FROM relay_operations
                    WHERE state IN (3, 4) AND finished_at < now() - make_interval(secs => \(window))
                    ORDER BY finished_at LIMIT \(limit))
                    UNION
                    (SELECT id FROM relay_operations
                    WHERE state IN (5, 6) AND finished_at < now() - make_interval(secs => \(deadLetterWindow))
                    ORDER BY finished_at LIMIT \(limit))
                    UNION
                    (SELECT id FROM relay_operations WHERE state IN (3, 4)
                    ORDER BY finished_at DESC OFFSET \(kept) LIMIT \(limit))
                    UNION
                    (SELECT id FROM relay_operations WHERE state IN (5, 6)
                    ORDER BY finished_at DESC OFFSET \(deadLettersKept) LIMIT \(limit))
                ), gone AS (
                    DELETE FROM relay_operations o USING expired WHERE o.id = expired.id RETURNING o.id
                ), unlinked AS (
                    DELETE FROM relay_dependencies d USING gone WHERE d.dependency = gone.id OR d.dependent = gone.id
                    RETURNING 1
                )
                SELECT count(*) FROM gone
                """)
            return Int(try rows.first?.decode(Int64.self) ?? 0)
        }
    }

    /// `duration` in seconds, at most a century: the database's intervals do not reach `Duration`'s largest.
    static func seconds(_ duration: Duration) -> Double {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return min(max(seconds, 0), 100 * 365 * 86_400)
    }
}
