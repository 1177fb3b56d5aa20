import Foundation

/// Something that happened to an operation in another process of a fleet, which a shared store announces to a
/// DataPoint's event streams through ``SharedLink/publish(_:)``.
///
/// The DataPoint numbers it as it numbers its own events, in the order the store announces it.
public struct SharedEvent: Sendable, Hashable {
    /// The operation it concerns.
    public let operationID: UUID
    /// The operation's sequence.
    public let sequenceName: CallSequence.Name
    /// What happened.
    public let kind: CallEvent.Kind
    /// When it happened, by the store's clock.
    public let date: Date

    /// Creates an event of another process's.
    ///
    /// - Parameters:
    ///   - operationID: The operation it concerns.
    ///   - sequenceName: The operation's sequence.
    ///   - kind: What happened.
    ///   - date: When it happened, by the store's clock.
    public init(operationID: UUID, sequenceName: CallSequence.Name, kind: CallEvent.Kind, date: Date) {
        self.operationID = operationID
        self.sequenceName = sequenceName
        self.kind = kind
        self.date = date
    }
}
