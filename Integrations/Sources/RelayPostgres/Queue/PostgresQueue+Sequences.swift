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
    /// - Throws: ``RelayError/Code/unknownSequence`` for a sequence never registered.
    func suspend(_ name: CallSequence.Name?) async throws {
        try await changeSuspensions(of: name, by: 1)
    }

    /// Resumes one suspension of `name`, or of the whole DataPoint when `nil`; resuming what is not suspended
    /// changes nothing.
    ///
    /// - Throws: ``RelayError/Code/unknownSequence`` for a sequence never registered.
    func resume(_ name: CallSequence.Name?) async throws {
        try await changeSuspensions(of: name, by: -1)
    }

    private func changeSuspensions(of name: CallSequence.Name?, by change: Int) async throws {
        let changed = try await Self.mapping("changing suspensions") {
            let found =
                if let name {
                    try await write(
                        "changing suspensions",
                        """
                        UPDATE relay_sequences SET suspensions = GREATEST(suspensions + \(change), 0)
                        WHERE name = \(name.rawValue) RETURNING pg_notify(\(Self.readyChannel), '')
                        """)
                } else {
                    try await write(
                        "changing suspensions",
                        """
                        UPDATE relay_counters SET suspensions = GREATEST(suspensions + \(change), 0)
                        RETURNING pg_notify(\(Self.readyChannel), '')
                        """)
                }
            return found.count
        }
        if changed == 0, let name {
            throw RelayError(.unknownSequence, "sequence \(name) is not registered")
        }
    }
}
