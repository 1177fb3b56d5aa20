import Foundation

/// The operations the pipeline knows: a slot for each, and the edges from each operation to the dependents that wait
/// for it.
///
/// Their ids are in the ``OperationDirectory``, which has a lock of its own; a method that needs it takes it.
///
/// The graph alone adds and removes operations and edges, and numbers commits. The state machine drives each
/// operation's life (its phase, attempts and times) through the subscript. Readiness is pushed: an operation that
/// finishes hands over its dependents (``takeDependents(of:)``), and the state machine counts each one's unfinished
/// dependencies down; no operation is ever found by scanning.
struct OperationGraph: Sendable {
    private var slots = ChunkedTable<OperationSlot>()
    /// Forgotten operations, still in their slots and in the directory until a transition that holds the directory
    /// vacates them (``vacateRemoved(releasing:into:)``).
    private var removed: [Int32] = []
    /// The snapshot number of the last commit.
    private(set) var lastSnapshot: UInt64 = 0
    /// The start order of the next operation added.
    private(set) var nextOrder: UInt64 = 1

    /// The slot of an operation, while the graph holds it.
    subscript(slot: Int32) -> OperationSlot {
        _read { yield slots[Int(slot)] }
        _modify { yield &slots[Int(slot)] }
    }

    /// The slot of a known operation.
    func slot(of id: UUID, in directory: OperationDirectory) -> Int32? {
        guard let slot = directory.slot(of: id), slots[Int(slot)].phase != .free else { return nil }
        return slot
    }

    /// The slots that hold an operation, in slot order.
    var occupied: some Sequence<Int32> {
        slots.indices.lazy.filter { self.slots[$0].phase != .free }.map { Int32($0) }
    }

    /// The slots of operations that have not finished, in slot order.
    var unfinished: [Int32] {
        slots.indices.lazy.filter { self.slots[$0].phase != .free && self.slots[$0].phase != .finished }
            .map { Int32($0) }
    }

    /// The operations waiting for `slot` to finish.
    func dependents(of slot: Int32) -> [Int32] {
        slots[Int(slot)].dependents
    }

    // MARK: - Commits

    /// The snapshot number of the next commit.
    var nextSnapshot: UInt64 { lastSnapshot + 1 }

    /// Puts a new operation of the next commit in the slot the directory admitted it to (``CommitAdmission``); `offset`
    /// is its place among the commit's new operations, which fixes its start order.
    mutating func add(
        _ slot: Int32,
        record: OperationRecord,
        lane: Int32,
        executor: Int32,
        offset: Int,
        enqueuedAt: Int64
    ) {
        occupy(
            slot,
            with: .init(
                record: record, lane: lane, executor: executor, order: nextOrder + UInt64(offset),
                snapshot: nextSnapshot, enqueuedAt: enqueuedAt))
    }

    /// Numbers a commit of `count` new operations, added with ``add(_:record:lane:executor:offset:enqueuedAt:)``;
    /// returns its snapshot number.
    mutating func closeCommit(adding count: Int) -> UInt64 {
        lastSnapshot += 1
        nextOrder += UInt64(count)
        return lastSnapshot
    }

    // MARK: - Edges

    /// Makes `dependent` wait for `dependency`, unless the dependency has finished; returns how the dependency ended,
    /// which is ``OperationSlot/Ending/unfinished`` when the edge was added.
    mutating func link(_ dependent: Int32, to dependency: Int32) -> OperationSlot.Ending {
        guard slots[Int(dependency)].phase == .finished else {
            slots[Int(dependency)].addDependent(dependent)
            slots[Int(dependent)].unfinishedDependencies += 1
            return .unfinished
        }
        return slots[Int(dependency)].ending
    }

    /// Hands over the operations waiting for `slot`, which has finished, and forgets the edges.
    mutating func takeDependents(of slot: Int32) -> (first: Int32, more: [Int32]) {
        slots[Int(slot)].takeDependents()
    }

    // MARK: - Restoring

    /// Makes room for `count` operations restored from storage, exactly: growth's headroom would cost a million
    /// pending operations 16 bytes each.
    mutating func reserve(restoring count: Int, lastSnapshot: UInt64, in directory: inout OperationDirectory) {
        directory.reserve(count, headroom: false)
        self.lastSnapshot = max(self.lastSnapshot, lastSnapshot)
    }

    /// Adds an operation restored from storage, with its own snapshot number; `nil` when its id is known already.
    mutating func restore(
        _ record: OperationRecord,
        lane: Int32,
        executor: Int32,
        snapshot: UInt64,
        enqueuedAt: Int64,
        in directory: inout OperationDirectory
    ) -> Int32? {
        let id = record.id
        // One probe per operation: a million random ids are a million cache misses, so never probe twice.
        guard case .vacant(let bucket, let hash) = directory.probe(id, hash: OperationIndex.hash(id)) else {
            return nil
        }
        let slot = directory.take(id, hash: hash, at: bucket)
        occupy(
            slot,
            with: .init(
                record: record, lane: lane, executor: executor, order: nextOrder, snapshot: snapshot,
                enqueuedAt: enqueuedAt))
        nextOrder += 1
        lastSnapshot = max(lastSnapshot, snapshot)
        return slot
    }

    // MARK: - Removing

    /// Whether removed operations wait to be vacated.
    var hasRemoved: Bool { !removed.isEmpty }

    /// Removes a finished operation that no dependency lists any more.
    ///
    /// It stays in its slot, known by its id, until the next transition that holds the directory vacates it: the
    /// directory's rule (see ``OperationDirectory``) lets a commit admit operations outside the state lock.
    mutating func remove(_ slot: Int32) {
        removed.append(slot)
    }

    /// Vacates the slots of the operations removed since the last call, appends their records to `released` for the
    /// caller to let go outside the lock, and hands the slots to the directory, which frees them and their ids.
    mutating func vacateRemoved(releasing released: inout [OperationRecord], into directory: inout OperationDirectory) {
        guard !removed.isEmpty else { return }
        released.reserveCapacity(released.count + removed.count)
        for slot in removed { released.append(slots[Int(slot)].vacate()) }
        directory.takeVacated(removed)
        removed.removeAll(keepingCapacity: true)
    }

    /// Gives a new operation the slot the directory took for it, in place when the slot was used before.
    private mutating func occupy(_ slot: Int32, with placement: OperationSlot.Placement) {
        guard Int(slot) == slots.count else {
            slots[Int(slot)].occupy(placement)
            return
        }
        slots.append(OperationSlot(placement))
    }
}
