import Foundation

/// Encodes models and values to JSON in one pass, as `JSONEncoder` with its default options would, for the document's
/// upserts.
///
/// `JSONEncoder` builds a tree of every value before it writes a byte; on a transaction of one upsert, that tree was
/// the largest cost Relay added. This writes each value as it is given. It covers what types encode in order, each
/// container filled before its parent goes on, which is what synthesized conformances do; any other use of the
/// `Encoder` API (a container asked for twice, a container written after its parent went on, a key written twice,
/// `superEncoder`, a non-finite number, `Decimal`, an error) makes it hand the value to `JSONEncoder` instead, whose
/// result or error is the answer. So what it writes is what `JSONDecoder` reads back as `JSONEncoder`'s output, and nothing else differs.
enum ModelEncoder {
    /// The JSON form of `value`.
    ///
    /// - Throws: What `JSONEncoder` throws for the value.
    static func encode<Value: Encodable>(_ value: Value) throws -> Data {
        try encodeInOnePass(value) ?? JSONEncoder().encode(value)
    }

    /// The JSON form of `value` written in one pass; `nil` when the value needs `JSONEncoder`.
    static func encodeInOnePass<Value: Encodable>(_ value: Value) -> Data? {
        let writer = JSONStreamWriter()
        do {
            try JSONSlotEncoder(writer: writer, depth: 0, codingPath: []).encodeValue(value)
        } catch {
            return nil
        }
        guard !writer.output.unsupported else { return nil }
        writer.output.closeAll()
        return Data(writer.output.bytes)
    }
}

/// Holds the output that the containers and slot encoders of one value share.
///
/// One stored property: a class's stored property is checked for exclusive access on every access, so each step of
/// the output is one `mutating` call on it, one check, however many bytes it appends.
final class JSONStreamWriter {
    var output = JSONOutput()

    /// Opens an object at the top of the output, the container of the value at `codingPath`.
    func keyedContainer<Key: CodingKey>(_ type: Key.Type, at codingPath: [any CodingKey]) -> KeyedEncodingContainer<Key>
    {
        let id = output.open(object: true)
        return KeyedEncodingContainer(
            JSONKeyedContainer<Key>(writer: self, index: output.depth - 1, id: id, codingPath: codingPath))
    }

    /// Opens an array at the top of the output, the container of the value at `codingPath`.
    func unkeyedContainer(at codingPath: [any CodingKey]) -> any UnkeyedEncodingContainer {
        let id = output.open(object: false)
        return JSONUnkeyedContainer(writer: self, index: output.depth - 1, id: id, codingPath: codingPath)
    }

    /// An encoder for a superclass's values, which one pass does not follow: the output is discarded.
    func superEncoder(at codingPath: [any CodingKey]) -> any Encoder {
        output.unsupported = true
        return JSONSlotEncoder(writer: self, depth: -1, codingPath: codingPath)
    }
}

/// The bytes written so far and the containers still open, innermost last.
struct JSONOutput {
    struct Frame {
        let id: UInt32
        let isObject: Bool
        /// Where its keys start in ``keys``.
        let keysStart: Int
        var count = 0
    }

    var bytes: [UInt8] = []
    /// Set when the value used the `Encoder` API in a way that one pass cannot follow: the output is discarded.
    var unsupported = false
    private(set) var stack: [Frame] = []
    private var nextID: UInt32 = 0
    /// The keys of the open objects, each object's after its parent's: a key written twice is a value `JSONEncoder`
    /// replaces and `JSONDecoder` would read the first of.
    private var keys: [String] = []
    /// The keys of open objects with many, for a look-up that stays fast, by object.
    private var keySets: [UInt32: Set<String>] = [:]

    init() {
        bytes.reserveCapacity(256)
        keys.reserveCapacity(16)
    }

    var depth: Int { stack.count }

    /// Opens a container at the top of the stack; returns its id.
    mutating func open(object: Bool) -> UInt32 {
        nextID &+= 1
        stack.append(Frame(id: nextID, isObject: object, keysStart: keys.count))
        bytes.append(object ? UInt8(ascii: "{") : UInt8(ascii: "["))
        return nextID
    }

    /// Makes room for the next element of the container at `index`; `false` (and the output discarded) when that
    /// container was closed already.
    ///
    /// The containers nested in it are done: they are closed first. Then the separator is written.
    mutating func beginElement(in index: Int, id: UInt32) -> Bool {
        guard index < stack.count, stack[index].id == id else {
            unsupported = true
            return false
        }
        while stack.count > index + 1 { close() }
        if stack[index].count > 0 { bytes.append(UInt8(ascii: ",")) }
        stack[index].count += 1
        return true
    }

    /// Begins the member `key` of the object at `index`.
    mutating func beginMember(_ key: String, in index: Int, id: UInt32) -> Bool {
        guard beginElement(in: index, id: id), isNew(key, in: stack[index]) else {
            unsupported = true
            return false
        }
        string(key)
        bytes.append(UInt8(ascii: ":"))
        return true
    }

    func count(of index: Int, id: UInt32) -> Int {
        index < stack.count && stack[index].id == id ? stack[index].count : 0
    }

    mutating func closeAll() {
        while !stack.isEmpty { close() }
    }

    /// Whether `key` is new in the object, which is the innermost open one; it is noted.
    private mutating func isNew(_ key: String, in frame: Frame) -> Bool {
        let written = keys.count - frame.keysStart
        if written < 16 {
            guard !keys[frame.keysStart...].contains(key) else { return false }
            keys.append(key)
            return true
        }
        if written == 16 { keySets[frame.id] = Set(keys[frame.keysStart...]) }
        keys.append(key)
        return keySets[frame.id]!.insert(key).inserted
    }

    private mutating func close() {
        let frame = stack.removeLast()
        if frame.isObject {
            if keys.count - frame.keysStart > 16 { keySets[frame.id] = nil }
            keys.removeLast(keys.count - frame.keysStart)
        }
        bytes.append(frame.isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
    }

    // MARK: - Literals

    mutating func null() {
        bytes.append(contentsOf: "null".utf8)
    }

    mutating func bool(_ value: Bool) {
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    mutating func integer(_ value: some BinaryInteger) {
        Self.integer(value, to: &bytes)
    }

    /// A finite number as `JSONEncoder` writes it: its description, without a trailing `.0`.
    mutating func float<F: BinaryFloatingPoint & CustomStringConvertible>(_ value: F) {
        guard value.isFinite else {
            // `JSONEncoder` throws for it, with its message.
            unsupported = true
            return null()
        }
        var description = value.description
        if description.hasSuffix(".0") { description.removeLast(2) }
        bytes.append(contentsOf: description.utf8)
    }

    /// A string, escaped as `JSONEncoder` escapes it.
    mutating func string(_ value: String) {
        Self.string(value, to: &bytes)
    }

    private static func integer(_ value: some BinaryInteger, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var rest = UInt64(value.magnitude)
        guard rest >= 10 else { return bytes.append(UInt8(ascii: "0") + UInt8(rest)) }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while rest > 0 {
                buffer[23 - count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            }
            bytes.append(contentsOf: buffer[(24 - count)...])
        }
    }

    private static func string(_ value: String, to bytes: inout [UInt8]) {
        var value = value
        value.withUTF8 { utf8 in
            bytes.append(UInt8(ascii: "\""))
            var start = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard
                    byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
                        || byte == UInt8(ascii: "/")
                else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                escape(byte, to: &bytes)
                start = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
            bytes.append(UInt8(ascii: "\""))
        }
    }

    private static func escape(_ byte: UInt8, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(byte)
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        default:
            let hex = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: "u00".utf8)
            bytes.append(hex[Int(byte >> 4)])
            bytes.append(hex[Int(byte & 0xF)])
        }
    }
}
