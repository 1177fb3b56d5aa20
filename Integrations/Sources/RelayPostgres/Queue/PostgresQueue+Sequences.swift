import Foundation
import NIOCore
import PostgresNIO
import Relay

extension PostgresQueue {
    /// Registers a sequence, or reconfigures it, fleet-wide: a new bunch size takes effect at the next claim, and
    /// lowering it stops nothing that runs.
    ///
    /// - Throws: ``RelayError/Code/invalidBunchSize`` for a bunch size below 1.
    func configure(_ name: CallSequence.Name, bunchSize: Int, algorithm: CallSequence.Algorithm) async throws {
        guard bunchSize >= 1 else {
            throw RelayError(.invalidBunchSize, "sequence \(name)'s bunch size is \(bunchSize); it must be at least 1")
        }
        try await Self.mapping("configuring sequence \(name)") {
            _ = try await write(
                "configuring sequence \(name)",
                """
                WITH saved AS (
                    INSERT INTO relay_sequences (name, bunch_size, commit_graph)
                    VALUES (\(name.rawValue), \(bunchSize), \(algorithm == .commitGraph))
                    ON CONFLICT (name) DO UPDATE
                    SET bunch_size = EXCLUDED.bunch_size, commit_graph = EXCLUDED.commit_graph
                    RETURNING 1
                )
                SELECT pg_notify(\(Self.readyChannel), '') FROM saved
                """)
        }
    }

    /// Counts one suspension of `name`, or of the whole DataPoint when `nil`: nothing more of it is claimed until
    /// every suspension is resumed, fleet-wide.
    ///
    /// - Returns: The count before and after.
    /// - Throws: ``RelayError/Code/unknownSequence`` for a sequence never registered.
    @discardableResult
    func suspend(_ name: CallSequence.Name?) async throws -> (previous: Int, count: Int) {
        try await changeSuspensions(of: name, by: 1)
    }

    /// Resumes one suspension of `name`, or of the whole DataPoint when `nil`; resuming what is not suspended
    /// changes nothing.
    ///
    /// - Returns: The count before and after.
    /// - Throws: ``RelayError/Code/unknownSequence`` for a sequence never registered.
    @discardableResult
    func resume(_ name: CallSequence.Name?) async throws -> (previous: Int, count: Int) {
        try await changeSuspensions(of: name, by: -1)
    }

    /// Moves a suspension count by `change`, never below zero, under its row's lock.
    ///
    /// A claim of the sequence, which takes the same lock, sees the count before or after, never between. A change
    /// that suspends (from zero) or resumes (to zero) is written to the event log in the same transaction, with
    /// `reason`, as `origin`'s.
    ///
    /// - Returns: The count before and after.
    func changeSuspensions(
        of name: CallSequence.Name?, by change: Int, reason: String = "", origin: UUID? = nil
    ) async throws -> (previous: Int, count: Int) {
        let changing = name.map { Self.changingSuspensions(of: $0, by: change) } ?? Self.changingSuspensions(by: change)
        return try await Self.mapping("changing suspensions") {
            try await transaction("changing suspensions") { connection in
                guard let row = try await self.rows(changing, on: connection).first else {
                    throw RelayError(.unknownSequence, "sequence \(name?.rawValue ?? "") is not registered")
                }
                let (previous, count) = try row.decode((Int32, Int32).self)
                if (previous == 0) != (count == 0) {
                    let kind = count > 0 ? Self.suspendedEvent : Self.resumedEvent
                    _ = try await self.rows(
                        """
                        WITH logged AS (
                            INSERT INTO relay_events (origin, sequence, kind, reason)
                            VALUES (\(origin), \(name?.rawValue), \(kind), \(reason))
                            RETURNING 1
                        )
                        SELECT pg_notify(\(Self.eventsChannel), '') FROM logged
                        """, on: connection)
                }
                return (Int(previous), Int(count))
            }
        }
    }

    /// The log's kinds of a suspension, a resume, a destination gone offline and one back online, after the
    /// operations' states.
    static let suspendedEvent: Int16 = 7
    static let resumedEvent: Int16 = 8
    static let offlineEvent: Int16 = 9
    static let onlineEvent: Int16 = 10
    /// The log's kind of a hold set or released on an operation.
    static let heldEvent: Int16 = 11

    /// Moves the suspension count of sequence `name`, and answers the count before and after; no row when the
    /// sequence is not registered.
    private static func changingSuspensions(of name: CallSequence.Name, by change: Int) -> PostgresQuery {
        """
        WITH target AS (
            SELECT name, suspensions FROM relay_sequences WHERE name = \(name.rawValue) FOR UPDATE
        ), changed AS (
            UPDATE relay_sequences s SET suspensions = GREATEST(s.suspensions + \(change), 0)
            FROM target WHERE s.name = target.name
            RETURNING s.suspensions, pg_notify(\(Self.readyChannel), '')
        )
        SELECT target.suspensions, (SELECT suspensions FROM changed) FROM target
        """
    }

    /// Moves the whole fleet's suspension count, and answers the count before and after.
    private static func changingSuspensions(by change: Int) -> PostgresQuery {
        """
        WITH target AS (
            SELECT singleton, suspensions FROM relay_counters FOR UPDATE
        ), changed AS (
            UPDATE relay_counters c SET suspensions = GREATEST(c.suspensions + \(change), 0)
            FROM target WHERE c.singleton = target.singleton
            RETURNING c.suspensions, pg_notify(\(Self.readyChannel), '')
        )
        SELECT target.suspensions, (SELECT suspensions FROM changed) FROM target
        """
    }
}
