/// A store that keeps state only in the running process: nothing survives the DataPoint.
///
/// Transitions still pass through it as records, and every record is durable at once, so acknowledgements never
/// wait. Use it for tests, benchmarks, and work that may be lost with the process.
///
/// ```swift
/// let point = try await DataPoint(storage: .volatile)
/// ```
public struct VolatileStorage: Storage {
    /// Creates a volatile store.
    public init() {}

    /// Returns an empty state.
    ///
    /// - Returns: ``StoredState/empty``.
    public func open() async throws -> StoredState { .empty }

    /// Accepts records without keeping them.
    ///
    /// - Parameter records: The transitions.
    /// - Returns: ``StorageTicket/durable``.
    public func append(_ records: [StorageRecord]) -> StorageTicket { .durable }

    /// Returns at once: everything is durable as soon as it is appended.
    ///
    /// - Parameter ticket: Any ticket.
    /// - Throws: Nothing; the signature follows ``Storage``.
    public func waitUntilDurable(_ ticket: StorageTicket) async throws {}

    /// Does nothing.
    public func close() async throws {}

    /// `false`: a volatile store keeps no records, so the pipeline builds none.
    public var keepsRecords: Bool { false }
}

extension Storage where Self == VolatileStorage {
    /// A store that keeps state only in the running process.
    public static var volatile: VolatileStorage { VolatileStorage() }
}
