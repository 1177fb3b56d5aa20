import Foundation
import NIOCore
import PostgresNIO
import Relay

extension PostgresQueue {
    /// Registers a sequence, or reconfigures it, fleet-wide.
    ///
    /// A new bunch size takes effect at the next claim, and lowering it stops nothing that runs. Unless `replacing`, a
    /// sequence registered already keeps its configuration.
    ///
    /// - Throws: ``RelayError/Code/invalidBunchSize`` for a bunch size below 1.
    func configure(
        _ name: CallSequence.Name, bunchSize: Int, algorithm: CallSequence.Algorithm, replacing: Bool = true
    ) async throws {
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
                    WHERE \(replacing)
                    RETURNING 1
                )
                SELECT pg_notify(\(Self.readyChannel), '') FROM saved
                """)
        }
    }

    /// Registers `names` with a bunch size of 1, as a DataPoint of one process has them, unless the fleet has them
    /// already; returns how the fleet configures them.
    func registerDefaults(
        _ names: [CallSequence.Name], within deadline: Duration
    ) async throws -> [StoredSequence] {
        try await Self.mapping("registering the default sequences") {
            try await transaction("registering the default sequences", within: deadline) { connection in
                let names = names.map(\.rawValue)
                _ = try await rows(
                    """
                    INSERT INTO relay_sequences (name, bunch_size) SELECT unnest(\(names)::text[]), 1
                    ON CONFLICT (name) DO NOTHING
                    """, on: connection)
                // Unsuspended here: the fleet's claims obey its suspensions.
                return try await rows(
                    "SELECT name, bunch_size, commit_graph FROM relay_sequences WHERE name = ANY(\(names))",
                    on: connection
                ).map { row in
                    let (name, bunchSize, commitGraph) = try row.decode((String, Int, Bool).self)
                    return StoredSequence(
                        name: CallSequence.Name(rawValue: name), bunchSize: bunchSize,
                        algorithm: commitGraph ? .commitGraph : .flat, suspensionCount: 0)
                }
            }
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
