/// Where a DataPoint records its state transitions.
///
/// The pipeline hands every transition to ``append(_:)`` as a ``StorageRecord``, in the order the transitions
/// happened, while it holds its own lock; appending must therefore be quick and must not suspend. Before anything is
/// acknowledged (an enqueue returning, an outcome reported to a handle), the pipeline awaits
/// ``waitUntilDurable(_:)`` for the ticket of the last record it depends on. A store may make many appends durable at
/// once (group commit).
///
/// Relay ships ``VolatileStorage`` (``Storage/volatile``), which keeps state only in the running process.
///
/// - Important: `append` is called under the pipeline's lock: never call back into the DataPoint from it, and copy
///   what you keep, since the array is reused.
public protocol Storage: Sendable {
    /// Opens the store and returns the state it holds, which the pipeline rebuilds itself from.
    ///
    /// - Returns: The stored state; ``StoredState/empty`` for a new store.
    /// - Throws: ``RelayError`` when the store cannot be opened or is corrupt.
    func open() async throws -> StoredState

    /// Opens the store for a DataPoint that keeps its finished operations as `retention` says; a store that drops
    /// finished operations when it folds its state keeps the same ones, so that ``DataPoint/handle(for:)`` finds them
    /// after a restart exactly as before it. By default, ``open()``.
    ///
    /// - Parameter retention: The DataPoint's policy, from its ``DataPoint/Configuration``.
    /// - Returns: The stored state; ``StoredState/empty`` for a new store.
    /// - Throws: ``RelayError`` when the store cannot be opened or is corrupt.
    func open(retention: RetentionPolicy) async throws -> StoredState

    /// Appends transitions in order and returns a ticket for their durability.
    ///
    /// - Parameter records: The transitions, oldest first.
    /// - Returns: A ticket to pass to ``waitUntilDurable(_:)``.
    func append(_ records: [StorageRecord]) -> StorageTicket

    /// Returns once every record up to the ticket is durable under the store's policy.
    ///
    /// - Parameter ticket: A ticket from ``append(_:)``.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/storageFailure`` when the records could not be made
    ///   durable.
    func waitUntilDurable(_ ticket: StorageTicket) async throws

    /// Whether the store keeps the records it is given.
    ///
    /// A store that keeps nothing, like ``VolatileStorage``, returns `false`, and the pipeline then builds no records
    /// at all. The default is `true`.
    var keepsRecords: Bool { get }

    /// Runs the store's work beside its writes, such as folding its log, until the task is cancelled.
    ///
    /// A running DataPoint runs it as a child task, so the work lives no longer than the DataPoint runs, and cancels it
    /// as it stops, before ``close()``. By default, it returns at once.
    func maintain() async

    /// Makes everything durable and releases the store.
    ///
    /// - Throws: ``RelayError`` when the final flush fails.
    func close() async throws
}

extension Storage {
    /// Stores keep the records they are given unless they say otherwise.
    public var keepsRecords: Bool { true }

    /// Returns at once: a store has no work beside its writes unless it says so.
    public func maintain() async {}

    /// Opens the store as ``open()`` does: a store that keeps every finished operation needs no window.
    public func open(retention: RetentionPolicy) async throws -> StoredState {
        try await open()
    }
}

/// A position in a store's record stream, used to wait for durability.
public struct StorageTicket: Sendable, Hashable, Comparable {
    /// The position; higher is later.
    public let position: UInt64

    /// Creates a ticket.
    ///
    /// - Parameter position: The position in the record stream.
    public init(position: UInt64) {
        self.position = position
    }

    /// A ticket that is durable already.
    public static let durable = StorageTicket(position: 0)

    /// Orders tickets by position.
    ///
    /// - Parameters:
    ///   - lhs: A ticket.
    ///   - rhs: Another ticket.
    /// - Returns: Whether `lhs` comes before `rhs`.
    public static func < (lhs: StorageTicket, rhs: StorageTicket) -> Bool {
        lhs.position < rhs.position
    }
}
