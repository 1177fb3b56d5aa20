import Foundation

/// Maps operation ids to slot numbers with open addressing and linear probing.
///
/// Every enqueue looks an id up, and new ids are random, so the lookup is a cache miss; the table is built to make that
/// miss cheap. Each entry is 8 bytes, a 32-bit hash of the id and the slot number, so the table stays small; the id
/// itself lives beside the slot number in ``OperationDirectory``, which checks it on the rare hash match. The hash
/// mixes the id's bits with a per-process seed, which keeps chosen ids from colliding on purpose. Removal shifts later
/// entries back instead of leaving tombstones, so probe runs stay short however many operations come and go.
struct OperationIndex: Sendable {
    private struct Entry: Sendable {
        var hash: UInt32
        /// The slot, or `empty`.
        var slot: Int32
    }

    private static let empty: Int32 = -1
    private static let seed = (UInt64.random(in: .min ... .max), UInt64.random(in: .min ... .max))

    private var entries: [Entry]
    private var mask: Int
    private(set) var count = 0
    /// Where ``warm(_:)`` leaves what it read, so that the reads are kept.
    private var warmed: Int32 = 0

    init(capacity: Int = 64) {
        var size = 16
        while size * 7 < capacity * 10 { size <<= 1 }
        entries = Array(repeating: Entry(hash: 0, slot: Self.empty), count: size)
        mask = size - 1
    }

    static func hash(_ id: UUID) -> UInt32 {
        let (high, low) = withUnsafeBytes(of: id.uuid) { bytes in
            (
                bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            )
        }
        var hash = (high ^ seed.0) &* 0x9E37_79B9_7F4A_7C15
        hash ^= low ^ seed.1
        hash = (hash ^ (hash >> 32)) &* 0xD6E8_FEB8_6659_FD93
        return UInt32(truncatingIfNeeded: hash ^ (hash >> 32))
    }

    /// Where an id is, or where it would go.
    enum Probe {
        case found(Int32)
        case vacant(bucket: Int, hash: UInt32)
    }

    /// Finds `id`, whose ``hash(_:)`` is `hash`, asking `holds` to confirm a slot whose hash matches; a vacant answer
    /// stays valid until the table next changes.
    func probe(_ id: UUID, hash: UInt32, holds: (Int32) -> Bool) -> Probe {
        var bucket = Int(hash) & mask
        while true {
            let entry = entries[bucket]
            if entry.slot == Self.empty { return .vacant(bucket: bucket, hash: hash) }
            if entry.hash == hash && holds(entry.slot) { return .found(entry.slot) }
            bucket = (bucket + 1) & mask
        }
    }

    /// Inserts at a bucket that ``probe(_:hash:holds:)`` just reported vacant; call ``reserve(_:headroom:)`` first.
    mutating func insert(_ slot: Int32, hash: UInt32, at bucket: Int) {
        entries[bucket] = Entry(hash: hash, slot: slot)
        count += 1
    }

    /// Reads the home bucket of each hash in one tight pass.
    ///
    /// Ids are random, so every bucket a batch touches is a cache miss. Issued back to back, the misses overlap;
    /// spread among a batch's other work, they would be paid one after another.
    mutating func warm<Hashes: Sequence<UInt32>>(_ hashes: Hashes) {
        var sum: Int32 = 0
        for hash in hashes { sum &+= entries[Int(hash) & mask].slot }
        warmed = sum
    }

    /// Removes the entry of `slot`, whose id has the given ``hash(_:)``.
    mutating func remove(hash: UInt32, slot: Int32) {
        var hole = Int(hash) & mask
        while entries[hole].slot != slot {
            if entries[hole].slot == Self.empty { return }
            hole = (hole + 1) & mask
        }
        count -= 1
        // Backward shift: pull later entries of the run into the hole when their home bucket allows it.
        var next = hole
        while true {
            next = (next + 1) & mask
            let entry = entries[next]
            if entry.slot == Self.empty { break }
            let home = Int(entry.hash) & mask
            let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if stays { continue }
            entries[hole] = entry
            hole = next
        }
        entries[hole].slot = Self.empty
    }

    /// Makes room for `additional` more ids, so that inserting them never grows the table.
    ///
    /// A table that grows makes room for twice as many, so that a stream of commits rebuilds it rarely; `headroom:
    /// false` sizes it for what is known to come, as when a store is reopened.
    mutating func reserve(_ additional: Int, headroom: Bool = true) {
        guard (count + additional) * 10 > entries.count * 7 else { return }
        var rebuilt = OperationIndex(capacity: max((count + additional) * (headroom ? 2 : 1), 64))
        for entry in entries where entry.slot != Self.empty {
            var bucket = Int(entry.hash) & rebuilt.mask
            while rebuilt.entries[bucket].slot != Self.empty { bucket = (bucket + 1) & rebuilt.mask }
            rebuilt.insert(entry.slot, hash: entry.hash, at: bucket)
        }
        self = rebuilt
    }
}
