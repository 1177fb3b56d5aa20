import Foundation

/// A read-only view of the operations' graph: each operation as enqueued, its dependents and holds, and the last
/// snapshot; a status is read from ``DataPoint/status(of:)`` or ``CallHandle/status``.
///
/// Reach it from ``DataPoint/pipeline``. Every answer is consistent with one moment of the pipeline's state. It is an
/// actor as the design's public faces are, and isolates nothing: its queries are `nonisolated` reads of the state
/// the DataPoint's engine owns (see <doc:ConcurrencyModel>).
///
/// ```swift
/// let snapshot = point.pipeline.lastSnapshot
/// let waiting = point.pipeline.dependents(of: id)
/// ```
public actor Pipeline {
    nonisolated let core: PipelineCore

    init(core: PipelineCore) {
        self.core = core
    }

    /// An operation as enqueued, with its snapshot.
    ///
    /// - Parameter id: The operation's id.
    /// - Returns: The operation, or `nil` when unknown.
    public nonisolated func operation(_ id: UUID) -> CallOperation? {
        core.readWithDirectory { $0.operation(id, in: $1) }
    }

    /// The operations still waiting for this one to finish.
    ///
    /// - Parameter id: The operation's id.
    /// - Returns: Their ids, or `nil` when the operation is unknown.
    public nonisolated func dependents(of id: UUID) -> [UUID]? {
        core.readWithDirectory { $0.dependents(of: id, in: $1) }
    }

    /// An operation's holds by context.
    ///
    /// - Parameter id: The operation's id.
    /// - Returns: When each context's hold ends, or `nil` when the operation is unknown.
    public nonisolated func holds(of id: UUID) -> [String?: Date]? {
        core.readWithDirectory { $0.holds(of: id, in: $1) }
    }

    /// The snapshot number of the latest commit; the next commit gets this plus 1.
    public nonisolated var lastSnapshot: UInt64 {
        core.read(\.graph.lastSnapshot)
    }
}
