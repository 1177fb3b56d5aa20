import Foundation

/// What a subscriber that fell behind lost: how many events, and which operations finished among them.
///
/// An observer that counts terminal events to know when it is done counts ``finished`` too, so a drop cannot keep it
/// waiting:
///
/// ```swift
/// let events = point.events()
/// let handles = try await point.enqueue(operations)
/// var remaining = Set(handles.map(\.id))
/// for await event in events {
///     if event.kind.isTerminal, let id = event.operationID { remaining.remove(id) }
///     if let dropped = event.kind.droppedEvents {
///         remaining.subtract(dropped.finished)
///         if !dropped.namesEveryFinished {
///             // Too many to name: ask the DataPoint about the rest.
///             for id in remaining where try await point.status(of: id)?.state.isTerminal != false {
///                 remaining.remove(id)
///             }
///         }
///     }
///     if remaining.isEmpty { break }
/// }
/// ```
public struct DroppedEvents: Sendable, Hashable, CustomStringConvertible {
    /// The most finished operations a notice names, per subscriber: 65,536 ids, 1 MiB, however long it goes unread.
    public static let maximumFinished = 65_536

    /// How many events were dropped.
    public let count: Int
    /// The operations whose terminal event (completed, skipped, failed or cancelled) was among the dropped events,
    /// oldest first, up to ``maximumFinished``.
    public let finished: [UUID]
    /// Whether ``finished`` names every operation whose terminal event was dropped; `false` past
    /// ``maximumFinished``.
    public let namesEveryFinished: Bool

    /// Creates a description of dropped events.
    ///
    /// - Parameters:
    ///   - count: How many events were dropped.
    ///   - finished: The operations whose terminal event was dropped.
    ///   - namesEveryFinished: Whether `finished` names all of them.
    public init(count: Int, finished: [UUID] = [], namesEveryFinished: Bool = true) {
        self.count = count
        self.finished = finished
        self.namesEveryFinished = namesEveryFinished
    }

    /// `90 events, 12 of them terminal`.
    public var description: String {
        let terminal = finished.isEmpty ? "" : ", \(finished.count)\(namesEveryFinished ? "" : "+") of them terminal"
        return count.counted("event") + terminal
    }
}
