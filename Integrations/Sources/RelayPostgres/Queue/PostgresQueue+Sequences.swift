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

    /// Moves a suspension count by `change`, never below zero, under its row's lock; a claim of the sequence, which
    /// takes the same lock, sees the count before or after, never between.
    ///
    /// - Returns: The count before and after.
    func changeSuspensions(of name: CallSequence.Name?, by change: Int) async throws -> (previous: Int, count: Int) {
        let rows = try await Self.mapping("changing suspensions") {
            if let name {
                try await write(
                    "changing suspensions",
                    """
                    WITH target AS (
                        SELECT name, suspensions FROM relay_sequences WHERE name = \(name.rawValue) FOR UPDATE
                    ), changed AS (
                        UPDATE relay_sequences s SET suspensions = GREATEST(s.suspensions + \(change), 0)
                        FROM target WHERE s.name = target.name
                        RETURNING s.suspensions, pg_notify(\(Self.readyChannel), '')
                    )
                    SELECT target.suspensions, (SELECT suspensions FROM changed) FROM target
                    """)
            } else {
                try await write(
                    "changing suspensions",
                    """
                    WITH target AS (
                        SELECT singleton, suspensions FROM relay_counters FOR UPDATE
                    ), changed AS (
                        UPDATE relay_counters c SET suspensions = GREATEST(c.suspensions + \(change), 0)
                        FROM target WHERE c.singleton = target.singleton
                        RETURNING c.suspensions, pg_notify(\(Self.readyChannel), '')
                    )
                    SELECT target.suspensions, (SELECT suspensions FROM changed) FROM target
                    """)
            }
        }
        guard let row = rows.first else {
            throw RelayError(.unknownSequence, "sequence \(name?.rawValue ?? "") is not registered")
        }
        let (previous, count) = try row.decode((Int32, Int32).self)
        return (Int(previous), Int(count))
    }
}
