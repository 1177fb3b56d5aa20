import Foundation

/// The dependencies of one commit's new operations, each looked up once.
///
/// Each id is looked up in the pass that gives its operation a slot, while the operation is in cache, and both
/// validation and wiring read the result. A dependency on an operation later in the same commit is not in the index
/// yet; validation resolves it once the whole commit is.
struct CommitEdges: Sendable {
    struct Edge: Sendable {
        /// The dependent's position among the commit's new operations.
        let position: Int32
        /// The dependency's id.
        let id: UUID
        /// The dependency's slot, or ``unresolved``.
        var target: Int32
    }

    static let unresolved: Int32 = -1

    /// In the order of the new operations, and of each one's dependencies.
    private(set) var edges: [Edge] = []

    /// Adds an edge of the new operation at `position`; a `nil` target is resolved later.
    mutating func add(position: Int, id: UUID, target: Int32?) {
        edges.append(Edge(position: Int32(position), id: id, target: target ?? Self.unresolved))
    }

    /// Sets the slot of the edge at `number` in ``edges``.
    mutating func resolve(_ number: Int, to target: Int32) {
        edges[number].target = target
    }
}
