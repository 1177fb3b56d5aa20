import Foundation

/// Something that happened in a DataPoint, delivered by ``DataPoint/events(bufferSize:)``.
///
/// Events carry a sequence number that increases strictly across the DataPoint, so a subscriber can order them and
/// see gaps. A subscriber that falls behind loses the oldest buffered events and receives a ``Kind/dropped(_:)``
/// event in their place.
public struct CallEvent: Sendable, Hashable {
    /// The position of the event in the DataPoint's history; strictly increasing.
    public let sequenceNumber: UInt64
    /// When it happened, on the DataPoint's clock.
    public let date: Date
    /// The operation it concerns, if any.
    public let operationID: UUID?
    /// The sequence it concerns, if any.
    public let sequenceName: CallSequence.Name?
    /// What happened.
    public let kind: Kind
}
