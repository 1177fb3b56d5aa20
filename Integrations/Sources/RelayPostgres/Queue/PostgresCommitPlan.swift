import Foundation
import NIOCore
import Relay

/// The rows a commit adds: each new operation's state, and how many unfinished dependencies block it, from the
/// states of the stored operations it names (locked for share while the commit is written).
///
/// An operation whose dependency already failed or was cancelled is added cancelled, as S5 cascades, unless it runs
/// anyway; so is one whose dependency in the same commit is added cancelled.
struct PostgresCommitPlan {
    struct Row {
        let id: UUID
        let sequence: String
        let ordinal: Int
        let priority: Int
        var state: Int16
        var blockers: Int
        let runAnyway: Bool
        let body: ByteBuffer
        /// Where its calls go (``Relay/CallOperation/destination``).
        let destination: String
        /// The encoded result of an operation added terminal; empty otherwise.
        var result: ByteBuffer
        let dependencies: [UUID]
    }

    private let operations: [(ordinal: Int, operation: CallOperation)]
    private let stored: [UUID: PostgresOperationState]
    private let added: Set<UUID>
    private(set) var rows: [Row] = []

    /// A plan for `operations`, those of the commit that are not stored yet, with their positions in the commit.
    init(_ operations: [(ordinal: Int, operation: CallOperation)], stored: [UUID: PostgresOperationState]) {
        self.operations = operations
        self.stored = stored
        added = Set(operations.map(\.operation.id))
    }

    /// A dependency that is neither stored nor added by the commit, if any.
    var unknownDependency: UUID? {
        for (_, operation) in operations {
            for dependency in operation.dependencies where stored[dependency] == nil && !added.contains(dependency) {
                return dependency
            }
        }
        return nil
    }

    /// The sequences the new operations name.
    var sequences: [String] { operations.map(\.operation.sequenceName.rawValue) }

    /// A cycle among the new operations' dependencies, in dependency order, if any: a cycle can only run through the
    /// commit's own operations, since stored ones never depend on new ones.
    var cycle: [UUID]? {
        let byID = Dictionary(
            operations.map { ($0.operation.id, $0.operation) }, uniquingKeysWith: { first, _ in first })
        var finished: Set<UUID> = []
        for (_, start) in operations where !finished.contains(start.id) {
            // Depth first, with an explicit stack: the path from `start`, and each step's dependencies left to visit.
            var path: [UUID] = []
            var stack: [(id: UUID, left: [UUID])] = []
            var onPath: Set<UUID> = []
            stack.append((start.id, Array(byID[start.id]?.dependencies ?? [])))
            path.append(start.id)
            onPath.insert(start.id)
            while !stack.isEmpty {
                guard let next = stack[stack.count - 1].left.popLast() else {
                    let done = stack.removeLast().id
                    finished.insert(done)
                    onPath.remove(done)
                    path.removeLast()
                    continue
                }
                guard added.contains(next), !finished.contains(next) else { continue }
                if onPath.contains(next) { return Array(path[path.firstIndex(of: next)!...]) }
                stack.append((next, Array(byID[next]?.dependencies ?? [])))
                path.append(next)
                onPath.insert(next)
            }
        }
        return nil
    }

    /// Decides every row's state, blockers and, for those added cancelled, result.
    mutating func settle() {
        var cancellations: [UUID: CallCancellation] = [:]
        for (_, operation) in operations where operation.onDependencyFailure == .cancel {
            for dependency in operation.dependencies.sorted(by: { $0.uuidString < $1.uuidString }) {
                if stored[dependency] == .failed {
                    cancellations[operation.id] = .dependencyFailed(dependency)
                } else if stored[dependency] == .cancelled {
                    cancellations[operation.id] = .dependencyCancelled(dependency)
                }
            }
        }
        // Within the commit, cancellation passes on until nothing changes; the commit has no cycle.
        var changed = true
        while changed {
            changed = false
            for (_, operation) in operations
            where operation.onDependencyFailure == .cancel && cancellations[operation.id] == nil {
                if let doomed = operation.dependencies.first(where: { added.contains($0) && cancellations[$0] != nil })
                {
                    cancellations[operation.id] = .dependencyCancelled(doomed)
                    changed = true
                }
            }
        }
        rows = operations.map { ordinal, operation in
            let blockers = operation.dependencies.count { dependency in
                if let state = stored[dependency] { return !state.isTerminal }
                return cancellations[dependency] == nil
            }
            let cancellation = cancellations[operation.id]
            let state: PostgresOperationState =
                cancellation != nil ? .cancelled : blockers > 0 ? .blocked : .pending
            return Row(
                id: operation.id, sequence: operation.sequenceName.rawValue, ordinal: ordinal,
                priority: operation.priority, state: state.rawValue, blockers: cancellation == nil ? blockers : 0,
                runAnyway: operation.onDependencyFailure == .runAnyway, body: ByteBuffer(bytes: operation.encoded()),
                destination: operation.destination,
                result: cancellation.map { ByteBuffer(bytes: CallResult.cancelled($0).encoded()) } ?? ByteBuffer(),
                dependencies: Array(operation.dependencies))
        }
    }
}
