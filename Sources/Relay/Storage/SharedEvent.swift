import Foundation

/// Something that happened in another process of a fleet, to an operation, to a sequence or to the whole fleet,
/// which a shared store announces to a DataPoint's event streams through ``SharedLink/publish(_:)``.
///
/// The DataPoint numbers it as it numbers its own events, in the order the store announces it.
public struct SharedEvent: Sendable, Hashable {
    /// The operation it concerns; `nil` for an event of a sequence or of the whole fleet, such as
    /// ``CallEvent/Kind/suspended(reason:)`` or ``CallEvent/Kind/offline(destination:reason:)``.
    public let operationID: UUID?
    /// The operation's sequence, or the sequence it concerns; `nil` for an event of the whole fleet.
    public let sequenceName: CallSequence.Name?
    /// What happened.
    public let kind: CallEvent.Kind
    /// When it happened, by the store's clock.
    public let date: Date

    /// Creates an event of an operation in another process.
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

    /// Creates an event of a sequence, or of the whole fleet, in another process: a suspension or a resume, or a
    /// destination gone offline or back online.
    ///
    /// Only streams of every event hear of it (``DataPoint/events(bufferSize:)``).
    ///
    /// - Parameters:
    ///   - sequenceName: The sequence it concerns, or `nil` for the whole fleet (for a destination the fleet keeps).
    ///   - kind: What happened.
    ///   - date: When it happened, by the store's clock.
    public init(sequenceName: CallSequence.Name?, kind: CallEvent.Kind, date: Date) {
        self.operationID = nil
        self.sequenceName = sequenceName
        self.kind = kind
        self.date = date
    }
}
