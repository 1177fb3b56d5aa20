import Foundation

/// Appends values to a byte buffer in the store's little-endian format.
struct ByteWriter {
    var bytes: [UInt8] = []

    init() {}

    /// A writer with room for `capacity` bytes, for a caller that knows about how much it writes.
    init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    mutating func byte(_ value: UInt8) {
        bytes.append(value)
    }

    mutating func fixed32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func fixed64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// LEB128: small numbers, which most are, take one byte.
    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    mutating func signed(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func int(_ value: Int) {
        signed(Int64(value))
    }

    mutating func double(_ value: Double) {
        fixed64(value.bitPattern)
    }

    mutating func bool(_ value: Bool) {
        bytes.append(value ? 1 : 0)
    }

    mutating func blob(_ value: Data) {
        varint(UInt64(value.count))
        // Through its buffer: appending `Data` itself goes through its iterator.
        value.withUnsafeBytes { bytes.append(contentsOf: $0) }
    }

    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func uuid(_ value: UUID) {
        withUnsafeBytes(of: value.uuid) { bytes.append(contentsOf: $0) }
    }

    mutating func date(_ value: Date) {
        double(value.timeIntervalSinceReferenceDate)
    }

    mutating func duration(_ value: Duration) {
        // Each read of `components` divides 128-bit numbers.
        let (seconds, attoseconds) = value.components
        signed(seconds)
        signed(attoseconds)
    }

    /// A presence byte, then the value when present.
    mutating func optional<Value>(_ value: Value?, _ write: (inout ByteWriter, Value) -> Void) {
        guard let value else { return byte(0) }
        byte(1)
        write(&self, value)
    }
}
