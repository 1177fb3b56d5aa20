/// What a file store found when it reopened: how much it replayed and what it repaired.
///
/// Read it from ``DataPoint/recoveryReport`` or from the ``CallEvent/Kind/recovered(_:)`` event that a DataPoint
/// publishes when it starts running.
public struct RecoveryReport: Sendable, Hashable {
    /// Journal records replayed on top of the last snapshot.
    public var recordsReplayed: Int
    /// Operations the store holds, finished ones inside the retention window included.
    public var operationsRecovered: Int
    /// Operations whose attempt was running when the process stopped; they run again with the attempt counted.
    public var interruptedOperations: Int
    /// Where a torn last record began in the journal, if the journal ended with one; it was truncated there.
    public var tornTailOffset: Int?
    /// Bytes cut from the end of the journal: a record that was being written when the process stopped, or a damaged
    /// one (see ``tailWasDamaged``).
    public var truncatedBytes: Int
    /// Whether the cut last transition was damaged rather than torn.
    ///
    /// All its bytes were there, but its checksum failed: it had been written whole, and may have been acknowledged.
    /// What it recorded is lost (an operation it finished runs again).
    public var tailWasDamaged: Bool

    /// Creates a report.
    ///
    /// - Parameters:
    ///   - recordsReplayed: Journal records replayed.
    ///   - operationsRecovered: Operations held.
    ///   - interruptedOperations: Operations that were running.
    ///   - tornTailOffset: Where a torn tail began.
    ///   - truncatedBytes: Bytes truncated.
    ///   - tailWasDamaged: Whether the cut last transition was damaged rather than torn.
    public init(
        recordsReplayed: Int = 0,
        operationsRecovered: Int = 0,
        interruptedOperations: Int = 0,
        tornTailOffset: Int? = nil,
        truncatedBytes: Int = 0,
        tailWasDamaged: Bool = false
    ) {
        self.recordsReplayed = recordsReplayed
        self.operationsRecovered = operationsRecovered
        self.interruptedOperations = interruptedOperations
        self.tornTailOffset = tornTailOffset
        self.truncatedBytes = truncatedBytes
        self.tailWasDamaged = tailWasDamaged
    }

    /// Whether opening the store cut anything from it.
    public var cutSomething: Bool { tornTailOffset != nil }
}

extension RecoveryReport: CustomStringConvertible {
    /// `12 operations (2 interrupted) from 843 records`, and what was cut when something was.
    public var description: String {
        var text =
            "\(operationsRecovered.counted("operation")) (\(interruptedOperations) interrupted) from "
            + "\(recordsReplayed.counted("record"))"
        if let tornTailOffset, tailWasDamaged {
            text +=
                "; the journal's last transition, at byte \(tornTailOffset), was damaged (all \(truncatedBytes) bytes "
                + "present, checksum mismatch) and was cut: what it recorded is lost, and an operation it finished "
                + "runs again"
        } else if let tornTailOffset {
            text +=
                "; a transition being written when the process stopped, at byte \(tornTailOffset), was cut "
                + "(\(truncatedBytes) bytes); it had not been acknowledged"
        }
        return text
    }
}
