import Foundation

/// Reads values written by ``ByteWriter``; any malformed input throws, never traps.
struct ByteReader {
    /// Input ended early or held an impossible value.
    struct Malformed: Error {}

    private let bytes: UnsafeRawBufferPointer
    private(set) var offset: Int

    init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var isAtEnd: Bool { offset >= bytes.count }
    var remaining: Int { bytes.count - offset }

    private mutating func take(_ count: Int) throws(Malformed) -> UnsafeRawBufferPointer {
        guard count >= 0, count <= remaining else { throw Malformed() }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    mutating func byte() throws(Malformed) -> UInt8 {
        try take(1)[0]
    }

    mutating func fixed32() throws(Malformed) -> UInt32 {
        UInt32(littleEndian: try take(4).loadUnaligned(as: UInt32.self))
    }

    mutating func fixed64() throws(Malformed) -> UInt64 {
        UInt64(littleEndian: try take(8).loadUnaligned(as: UInt64.self))
    }

    mutating func varint() throws(Malformed) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let next = try byte()
            guard shift < 64 else { throw Malformed() }
            value |= UInt64(next & 0x7F) << shift
            if next & 0x80 == 0 { return value }
            shift += 7
        }
    }

    mutating func signed() throws(Malformed) -> Int64 {
        let raw = try varint()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    mutating func int() throws(Malformed) -> Int {
        Int(try signed())
    }

    /// A count of items that each take at least one byte, so a corrupt count cannot ask for more than remains.
    mutating func count() throws(Malformed) -> Int {
        let value = try varint()
        guard value <= UInt64(remaining) else { throw Malformed() }
        return Int(value)
    }

    mutating func double() throws(Malformed) -> Double {
        Double(bitPattern: try fixed64())
    }

    mutating func bool() throws(Malformed) -> Bool {
        switch try byte() {
        case 0: false
        case 1: true
        default: throw Malformed()
        }
    }

    mutating func blob() throws(Malformed) -> Data {
        Data(try take(try count()))
    }

    mutating func string() throws(Malformed) -> String {
        String(decoding: try take(try count()), as: UTF8.self)
    }

    mutating func uuid() throws(Malformed) -> UUID {
        UUID(uuid: try take(16).loadUnaligned(as: uuid_t.self))
    }

    /// A date; a value that is not finite is damage, since no clock makes one.
    mutating func date() throws(Malformed) -> Date {
        let interval = try double()
        guard interval.isFinite else { throw Malformed() }
        return Date(timeIntervalSinceReferenceDate: interval)
    }

    /// A commit's snapshot number; one too large to be followed by more commits is damage.
    mutating func snapshotNumber() throws(Malformed) -> UInt64 {
        let value = try varint()
        guard value <= UInt64(Int64.max) else { throw Malformed() }
        return value
    }

    /// A count of attempts or a suspension count: never negative, and small enough to count on from.
    mutating func counter() throws(Malformed) -> Int {
        let value = try int()
        guard value >= 0, value <= Int(Int32.max) / 2 else { throw Malformed() }
        return value
    }

    mutating func duration() throws(Malformed) -> Duration {
        Duration(secondsComponent: try signed(), attosecondsComponent: try signed())
    }

    mutating func optional<Value>(
        _ read: (inout ByteReader) throws(Malformed) -> Value
    ) throws(Malformed) -> Value? {
        try bool() ? try read(&self) : nil
    }
}
