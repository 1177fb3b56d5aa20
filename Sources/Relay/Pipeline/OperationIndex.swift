import Foundation

/// Maps operation ids to slot numbers with open addressing and linear probing.
///
/// The standard dictionary hashes a UUID with SipHash and keeps keys and values apart, so each lookup costs two cache
/// misses; ids are looked up on every enqueue, and this table keeps each id beside its slot and mixes the id's own
/// bits with a per-process seed (which keeps chosen ids from colliding on purpose). Removal shifts later entries
/// back instead of leaving tombstones, so probe runs stay short however many operations come and go.
struct OperationIndex: Sendable {
    private struct Entry: Sendable {
        var id: UUID
        /// The slot, or one of the markers below.
        var slot: Int32
    }

    private static let empty: Int32 = -1
    private static let seed = (UInt64.random(in: .min ... .max), UInt64.random(in: .min ... .max))
    private static let zero = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    private var entries: [Entry]
    private var mask: Int
    private(set) var count = 0

    init(capacity: Int = 64) {
        var size = 16
        while size * 7 < capacity * 10 { size <<= 1 }
        entries = Array(repeating: Entry(id: Self.zero, slot: Self.empty), count: size)
        mask = size - 1
    }

    private static func bucket(of id: UUID, mask: Int) -> Int {
        let (high, low) = withUnsafeBytes(of: id.uuid) { bytes in
            (
                bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            )
        }
        var hash = (high ^ seed.0) &* 0x9E37_79B9_7F4A_7C15
        hash ^= low ^ seed.1
        hash = (hash ^ (hash >> 32)) &* 0xD6E8_FEB8_6659_FD93
        hash ^= hash >> 32
        return Int(truncatingIfNeeded: hash) & mask
    }

    /// Where `id` is, or where it would go.
    enum Probe {
        case found(Int32)
        case vacant(bucket: Int)
    }

    /// Finds `id`, or the bucket an insertion would use; valid until the table next changes.
    func probe(_ id: UUID) -> Probe {
        var bucket = Self.bucket(of: id, mask: mask)
        while true {
            let entry = entries[bucket]
            if entry.slot == Self.empty { return .vacant(bucket: bucket) }
            if entry.id == id { return .found(entry.slot) }
            bucket = (bucket + 1) & mask
        }
    }

    /// Inserts at a bucket that ``probe(_:)`` just reported vacant; call ``reserve(_:)`` first.
    mutating func insert(_ id: UUID, _ slot: Int32, at bucket: Int) {
        entries[bucket] = Entry(id: id, slot: slot)
        count += 1
    }

    subscript(id: UUID) -> Int32? {
        get {
            if case .found(let slot) = probe(id) { return slot }
            return nil
        }
        set {
            remove(id)
            guard let newValue else { return }
            reserve(1)
            if case .vacant(let bucket) = probe(id) { insert(id, newValue, at: bucket) }
        }
    }

    /// Removes `id` if present, in one pass over its probe run.
    mutating func remove(_ id: UUID) {
        var hole = Self.bucket(of: id, mask: mask)
        while entries[hole].id != id || entries[hole].slot == Self.empty {
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
            let home = Self.bucket(of: entry.id, mask: mask)
            let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if stays { continue }
            entries[hole] = entry
            hole = next
        }
        entries[hole].slot = Self.empty
    }

    /// Makes room for `additional` more ids, so that inserting them never grows the table.
    mutating func reserve(_ additional: Int) {
        guard (count + additional) * 10 > entries.count * 7 else { return }
        var rebuilt = OperationIndex(capacity: max((count + additional) * 2, 64))
        for entry in entries where entry.slot >= 0 {
            if case .vacant(let bucket) = rebuilt.probe(entry.id) { rebuilt.insert(entry.id, entry.slot, at: bucket) }
        }
        self = rebuilt
    }
}
