import Foundation

/// Which slot holds each known operation, and which slot numbers are free.
///
/// The directory has its own lock, beside the state machine's, so that a commit looks its ids up and takes their
/// slots while workers go on (see ``PipelineCore``). Its rule: a slot whose id is in the directory stays occupied, and
/// both change only while the directory is held. The graph queues the slots of forgotten operations; a transition
/// that holds the directory vacates them and hands them over (``takeVacated(_:)``), and their ids leave the index
/// once the state lock is let go (``releaseVacated()``).
struct OperationDirectory: Sendable {
    private struct Entry: Sendable {
        let id: UUID
        let hash: UInt32
    }

    private var index = OperationIndex()
    /// Each slot's id and its hash, so that a probe confirms a match and a release finds the index entry without
    /// reading the state machine's slots.
    private var entries = ChunkedTable<Entry>()
    private var freeSlots: [Int32] = []
    /// Slots the graph vacated whose ids are still indexed; a buffer that keeps its capacity from one hand-over to the
    /// next.
    private var vacated: [Int32] = []

    /// Known operations.
    var count: Int { index.count }

    /// The slot of a known operation.
    func slot(of id: UUID) -> Int32? {
        if case .found(let slot) = probe(id, hash: OperationIndex.hash(id)) { return slot }
        return nil
    }

    func probe(_ id: UUID, hash: UInt32) -> OperationIndex.Probe {
        index.probe(id, hash: hash) { entries[Int($0)].id == id }
    }

    /// The id in `slot`, while it is taken.
    func id(of slot: Int32) -> UUID {
        entries[Int(slot)].id
    }

    /// Makes room for `additional` more operations, so that taking their slots never grows the index (see
    /// ``OperationIndex/reserve(_:headroom:)``).
    mutating func reserve(_ additional: Int, headroom: Bool = true) {
        index.reserve(additional, headroom: headroom)
    }

    /// Reads the home bucket of each hash in one tight pass (see ``OperationIndex/warm(_:)``).
    mutating func warm(_ hashes: [UInt32]) {
        index.warm(hashes)
    }

    /// Takes a slot for `id`, at a bucket that ``probe(_:hash:)`` just reported vacant: a free one when there is one.
    mutating func take(_ id: UUID, hash: UInt32, at bucket: Int) -> Int32 {
        let slot: Int32
        if let reused = freeSlots.popLast() {
            slot = reused
            entries[Int(reused)] = Entry(id: id, hash: hash)
        } else {
            slot = Int32(entries.count)
            entries.append(Entry(id: id, hash: hash))
        }
        index.insert(slot, hash: hash, at: bucket)
        return slot
    }

    /// Gives back slots taken by a rejected commit, latest first, so that the free list and the table end exactly as
    /// they were.
    mutating func giveBack(_ slots: [Int32]) {
        for slot in slots.reversed() {
            index.remove(hash: entries[Int(slot)].hash, slot: slot)
            if Int(slot) == entries.count - 1 {
                entries.removeLast()
            } else {
                freeSlots.append(slot)
            }
        }
    }

    /// Notes the slots the graph just vacated; their ids stay indexed until ``releaseVacated()``.
    mutating func takeVacated(_ slots: [Int32]) {
        vacated += slots
    }

    /// Forgets the ids of the slots taken by ``takeVacated(_:)`` and frees the slots.
    mutating func releaseVacated() {
        guard !vacated.isEmpty else { return }
        release(vacated)
        vacated.removeAll(keepingCapacity: true)
    }

    /// Forgets the operations in `slots`, which the state machine vacated, and frees their slots.
    private mutating func release(_ slots: [Int32]) {
        guard !slots.isEmpty else { return }
        if slots.count > 1 {
            // Each removal misses the cache on its index bucket; reading them all first lets the misses overlap.
            let entries = self.entries
            index.warm(slots.lazy.map { entries[Int($0)].hash })
        }
        for slot in slots {
            index.remove(hash: entries[Int(slot)].hash, slot: slot)
            freeSlots.append(slot)
        }
    }
}
