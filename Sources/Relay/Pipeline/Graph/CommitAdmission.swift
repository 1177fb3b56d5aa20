import Foundation

/// What the directory made of a commit, before the state machine applies it: the slots it
/// took for new operations, the operations it knows already, the commit's dependency edges, and the errors it found.
///
/// Errors are reported, not thrown: the state machine checks what only it knows (sequences, kinds, and whether a
/// known operation's content differs) for every operation before them, so that the first bad operation is the one
/// reported, as if one pass had checked everything in commit order.
struct CommitAdmission: Sendable {
    /// An operation the commit names again.
    struct Known: Sendable {
        let position: Int
        let slot: Int32
        /// The position of this commit's earlier operation with the same id, when the commit names an id twice.
        let twin: Int?
    }

    /// The slots taken for new operations, in commit order.
    var fresh: [Int32] = []
    /// Each new operation's position in the commit.
    var positions: [Int32] = []
    /// The new operations' payload bytes.
    var freshBytes = 0
    var known: [Known] = []
    var edges = CommitEdges()
    /// The first operation the preparation found invalid; no slot was taken from there on.
    var rejected: (position: Int, error: RelayError)?
    /// Why the new operations' dependencies are invalid.
    var dependencyError: RelayError?
}

extension OperationDirectory {
    /// Takes a slot and an index entry for each new operation of the commit, looks up its dependencies, and checks
    /// that the commit's new edges name known operations and close no cycle.
    mutating func admit(_ batch: [CallOperation], preparation: CommitPreparation) -> CommitAdmission {
        var admission = CommitAdmission()
        admission.fresh.reserveCapacity(batch.count)
        admission.positions.reserveCapacity(batch.count)
        reserve(batch.count)
        let hashes = preparation.hashes
        warm(hashes)
        var invalid = preparation.invalid[...]
        // A commit that names an id twice finds its own earlier slot; built only once a known id turns up.
        var positionsBySlot: [Int32: Int]?
        for position in batch.indices {
            let id = batch[position].id
            switch probe(id, hash: hashes[position]) {
            case .found(let slot):
                if positionsBySlot == nil {
                    positionsBySlot = Dictionary(
                        uniqueKeysWithValues: zip(admission.fresh, admission.positions.lazy.map { Int($0) }))
                }
                admission.known.append(.init(position: position, slot: slot, twin: positionsBySlot?[slot]))
            case .vacant(let bucket, let hash):
                // A known operation is not validated again, so its own invalid entry is skipped.
                while let skipped = invalid.first, skipped.position < position { invalid.removeFirst() }
                if let rejected = invalid.first, rejected.position == position {
                    admission.rejected = rejected
                    return admission
                }
                let slot = take(id, hash: hash, at: bucket)
                positionsBySlot?[slot] = position
                for dependency in batch[position].dependencies {
                    admission.edges.add(
                        position: admission.fresh.count, id: dependency, target: self.slot(of: dependency))
                }
                admission.fresh.append(slot)
                admission.positions.append(Int32(position))
                admission.freshBytes += batch[position].payload.count
            }
        }
        admission.dependencyError = dependencyError(of: &admission)
        return admission
    }

    /// Every dependency must be known or in this commit, and the commit's new edges must not close a cycle.
    ///
    /// Known operations never depend on new ones, so a cycle can only run through this commit's operations. An edge
    /// that ``admit(_:preparation:)`` could not resolve points to a later operation of the commit; without one, the
    /// commit's own order rules a cycle out.
    private func dependencyError(of admission: inout CommitAdmission) -> RelayError? {
        var forwardEdges = false
        for (number, edge) in admission.edges.edges.enumerated() {
            let dependent = admission.fresh[Int(edge.position)]
            if edge.target == dependent {
                let id = id(of: dependent)
                return RelayError(.dependencyCycle, "operation \(id) depends on itself", operationIDs: [id])
            }
            guard edge.target == CommitEdges.unresolved else { continue }
            guard let target = slot(of: edge.id) else {
                let id = id(of: dependent)
                return RelayError(
                    .unknownDependency,
                    "operation \(id) depends on \(edge.id), which is neither known nor in this commit",
                    operationIDs: [id, edge.id]
                )
            }
            admission.edges.resolve(number, to: target)
            forwardEdges = true
        }
        guard forwardEdges, let cycle = Self.findCycle(in: admission.fresh, edges: admission.edges) else { return nil }
        let ids = cycle.map { id(of: $0) }
        return RelayError(
            .dependencyCycle,
            "dependencies form a cycle: " + ids.map(\.uuidString).joined(separator: " → "),
            operationIDs: ids
        )
    }

    /// Depth-first search over the commit's own edges, resolved already; returns one cycle in dependency order.
    private static func findCycle(in fresh: [Int32], edges: CommitEdges) -> [Int32]? {
        enum Mark: UInt8 {
            case unvisited
            case onPath
            case done
        }
        let positions = Dictionary(uniqueKeysWithValues: zip(fresh, fresh.indices))
        // Each new operation's edges are contiguous, in the order of the operations.
        var firstEdge = [Int](repeating: edges.edges.count, count: fresh.count + 1)
        for (number, edge) in edges.edges.enumerated().reversed() { firstEdge[Int(edge.position)] = number }
        for position in stride(from: fresh.count - 1, through: 0, by: -1) {
            firstEdge[position] = min(firstEdge[position], firstEdge[position + 1])
        }
        func internalDependencies(_ position: Int) -> [Int] {
            edges.edges[firstEdge[position]..<firstEdge[position + 1]].compactMap { positions[$0.target] }
        }
        var marks = [Mark](repeating: .unvisited, count: fresh.count)
        var path: [(position: Int, next: [Int])] = []
        for root in fresh.indices where marks[root] == .unvisited {
            marks[root] = .onPath
            path.append((root, internalDependencies(root)))
            while !path.isEmpty {
                guard let target = path[path.count - 1].next.popLast() else {
                    marks[path.removeLast().position] = .done
                    continue
                }
                switch marks[target] {
                case .done:
                    continue
                case .onPath:
                    let start = path.firstIndex { $0.position == target } ?? 0
                    return path[start...].map { fresh[$0.position] }
                case .unvisited:
                    marks[target] = .onPath
                    path.append((target, internalDependencies(target)))
                }
            }
        }
        return nil
    }
}
