import Foundation

/// One collection's encoded models, packed: every model's bytes in one buffer, each behind its length, and each id's
/// offset into it.
///
/// A `Data` per model costs an object and an allocation of its own, about 100 bytes beyond the model's encoded size;
/// packed, a model costs its bytes, a 4-byte length and its entry in the index (an id of up to 15 bytes is stored
/// inline). Each entry packs the model's offset with its length, so that replacing or removing a model never reads
/// the buffer at a random place to learn how much it leaves behind. The buffer grows by an eighth at a time rather than
/// doubling. Replacing or removing a model leaves its old bytes behind; once they are more than a quarter of the
/// buffer, the next change copies the live models into a new buffer. So the buffer stays within about 1.4 times the
/// live models, and each byte written is copied a few times on average.
struct ModelTable: Sendable {
    /// Each model's offset in `bytes`, shifted left by 24, with its length below; a length of ``longLength`` or more
    /// reads as ``longLength``, and the buffer has the rest.
    private var offsets: [String: Int] = [:]
    private static let longLength = (1 << 24) - 1
    private var bytes: [UInt8] = []
    /// Bytes of models replaced or removed, lengths included.
    private var garbage = 0

    init() {}

    /// A table of `models`, its buffer sized to fit.
    init(_ models: [String: Data]) {
        offsets.reserveCapacity(models.count)
        bytes.reserveCapacity(models.values.reduce(0) { $0 + 4 + $1.count })
        for (id, encoded) in models { offsets[id] = append(encoded) }
    }

    var count: Int { offsets.count }

    var isEmpty: Bool { offsets.isEmpty }

    /// The size of the buffer in use, live models and garbage.
    var storedBytes: Int { bytes.count }

    /// The encoded model `id`, copied out; `nil` when there is none.
    subscript(id: String) -> Data? {
        offsets[id].map(model(at:))
    }

    /// Stores the encoded model `id`, or removes it when `encoded` is `nil`.
    mutating func set(_ encoded: Data?, for id: String) {
        let old = encoded.map { offsets.updateValue(append($0), forKey: id) } ?? offsets.removeValue(forKey: id)
        if let old { garbage += 4 + length(of: old) }
        if garbage > 64 << 10, garbage * 4 > bytes.count { compact() }
    }

    /// Every model, by id, copied out.
    var all: [String: Data] {
        offsets.mapValues(model(at:))
    }

    /// The ids of the models the table holds.
    var ids: Dictionary<String, Int>.Keys { offsets.keys }

    /// Whether the table holds model `id`.
    func contains(_ id: String) -> Bool {
        offsets[id] != nil
    }

    /// Appends a model's length and bytes; returns its entry.
    private mutating func append(_ encoded: Data) -> Int {
        let offset = bytes.count
        let needed = offset + 4 + encoded.count
        if needed > bytes.capacity { bytes.reserveCapacity(max(needed, offset + offset / 8 + 4096)) }
        withUnsafeBytes(of: UInt32(encoded.count).littleEndian) { bytes.append(contentsOf: $0) }
        encoded.withUnsafeBytes { bytes.append(contentsOf: $0) }
        return offset << 24 | min(encoded.count, Self.longLength)
    }

    private func length(of entry: Int) -> Int {
        let length = entry & Self.longLength
        guard length == Self.longLength else { return length }
        return bytes.withUnsafeBytes {
            Int(UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: entry >> 24, as: UInt32.self)))
        }
    }

    private func model(at entry: Int) -> Data {
        let start = (entry >> 24) + 4
        return Data(bytes[start..<(start + length(of: entry))])
    }

    /// Copies the live models into a new buffer, and updates their offsets in place, hashing no id.
    private mutating func compact() {
        var packed: [UInt8] = []
        packed.reserveCapacity(bytes.count - garbage)
        // Indices by hand: `indices` would hold the dictionary, and the first write would copy it.
        var index = offsets.startIndex
        while index != offsets.endIndex {
            let entry = offsets.values[index]
            let offset = entry >> 24
            offsets.values[index] = packed.count << 24 | entry & Self.longLength
            packed.append(contentsOf: bytes[offset..<(offset + 4 + length(of: entry))])
            offsets.formIndex(after: &index)
        }
        bytes = packed
        garbage = 0
    }
}
