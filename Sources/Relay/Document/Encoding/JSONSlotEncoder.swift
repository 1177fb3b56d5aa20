import Foundation

/// The encoder of one value's place in the output: the root, a member of an object or an element of an array.
///
/// It fills its place once, with one container or one single value; a second use, or a use after its parent went
/// on, marks the output unsupported (see ``ModelEncoder``).
final class JSONSlotEncoder: Encoder {
    let writer: JSONStreamWriter
    /// How many containers are open around the place.
    let depth: Int
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    private(set) var filled = false

    init(writer: JSONStreamWriter, depth: Int, codingPath: [any CodingKey]) {
        self.writer = writer
        self.depth = depth
        self.codingPath = codingPath
    }

    /// Claims the place; `false` (and the output unsupported) when it was filled already or its parent went on.
    func fill() -> Bool {
        guard !filled, writer.output.depth == depth else {
            writer.output.unsupported = true
            return false
        }
        filled = true
        return true
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        _ = fill()
        return writer.keyedContainer(Key.self, at: codingPath)
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        _ = fill()
        return writer.unkeyedContainer(at: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        JSONSingleValueContainer(slot: self)
    }

    /// Writes `value` in this place: the types `JSONEncoder` writes its own way, the common scalars directly, and
    /// anything else through its own `encode(to:)`.
    func encodeValue<Value: Encodable>(_ value: Value) throws {
        // Type identity, not casts: a failed cast looks up conformances, on every value.
        if Value.self == String.self {
            guard fill() else { return }
            writer.output.string(unsafeBitCast(value, to: String.self))
        } else if Value.self == Int.self {
            guard fill() else { return }
            writer.output.integer(unsafeBitCast(value, to: Int.self))
        } else if Value.self == Bool.self {
            guard fill() else { return }
            writer.output.bool(unsafeBitCast(value, to: Bool.self))
        } else if Value.self == Double.self {
            guard fill() else { return }
            writer.output.float(unsafeBitCast(value, to: Double.self))
        } else if Value.self == Data.self {
            guard fill() else { return }
            writer.output.string(unsafeBitCast(value, to: Data.self).base64EncodedString())
        } else if Value.self == URL.self {
            guard fill() else { return }
            writer.output.string(unsafeBitCast(value, to: URL.self).absoluteString)
        } else if Value.self == Decimal.self {
            writer.output.unsupported = true
        } else {
            try value.encode(to: self)
            // A value that asked for no container is an empty object in `JSONEncoder`'s output too.
            if !filled, fill() { writer.output.bytes.append(contentsOf: "{}".utf8) }
        }
    }
}

/// The place of an array's element in a coding path.
struct JSONIndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }

    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

struct JSONKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: JSONStreamWriter
    let index: Int
    let id: UInt32
    let codingPath: [any CodingKey]

    private func member(_ key: Key) -> Bool {
        writer.output.beginMember(key.stringValue, in: index, id: id)
    }

    mutating func encodeNil(forKey key: Key) throws { if member(key) { writer.output.null() } }
    mutating func encode(_ value: Bool, forKey key: Key) throws { if member(key) { writer.output.bool(value) } }
    mutating func encode(_ value: String, forKey key: Key) throws { if member(key) { writer.output.string(value) } }
    mutating func encode(_ value: Double, forKey key: Key) throws { if member(key) { writer.output.float(value) } }
    mutating func encode(_ value: Float, forKey key: Key) throws { if member(key) { writer.output.float(value) } }
    mutating func encode(_ value: Int, forKey key: Key) throws { if member(key) { writer.output.integer(value) } }
    mutating func encode(_ value: Int8, forKey key: Key) throws { if member(key) { writer.output.integer(value) } }
    mutating func encode(_ value: Int16, forKey key: Key) throws { if member(key) { writer.output.integer(value) } }
    mutating func encode(_ value: Int32, forKey key: Key) throws { if member(key) { writer.output.integer(value) } }
    mutating func encode(_ value: Int64, forKey key: Key) throws { if member(key) { writer.output.integer(value) } }
    mutating func encode(_ value: UInt, forKey key: Key) throws { if member(key) { writer.output.integer(value) } }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { if member(key) { writer.output.integer(value) } }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { if member(key) { writer.output.integer(value) } }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { if member(key) { writer.output.integer(value) } }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { if member(key) { writer.output.integer(value) } }

    mutating func encode<Value: Encodable>(_ value: Value, forKey key: Key) throws {
        guard member(key) else { return }
        try JSONSlotEncoder(writer: writer, depth: writer.output.depth, codingPath: codingPath + [key]).encodeValue(
            value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        _ = member(key)
        return writer.keyedContainer(NestedKey.self, at: codingPath + [key])
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        _ = member(key)
        return writer.unkeyedContainer(at: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        writer.superEncoder(at: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        writer.superEncoder(at: codingPath + [key])
    }
}

struct JSONUnkeyedContainer: UnkeyedEncodingContainer {
    let writer: JSONStreamWriter
    let index: Int
    let id: UInt32
    let codingPath: [any CodingKey]

    var count: Int { writer.output.count(of: index, id: id) }

    private func element() -> Bool {
        writer.output.beginElement(in: index, id: id)
    }

    mutating func encodeNil() throws { if element() { writer.output.null() } }
    mutating func encode(_ value: Bool) throws { if element() { writer.output.bool(value) } }
    mutating func encode(_ value: String) throws { if element() { writer.output.string(value) } }
    mutating func encode(_ value: Double) throws { if element() { writer.output.float(value) } }
    mutating func encode(_ value: Float) throws { if element() { writer.output.float(value) } }
    mutating func encode(_ value: Int) throws { if element() { writer.output.integer(value) } }
    mutating func encode(_ value: Int8) throws { if element() { writer.output.integer(value) } }
    mutating func encode(_ value: Int16) throws { if element() { writer.output.integer(value) } }
    mutating func encode(_ value: Int32) throws { if element() { writer.output.integer(value) } }
    mutating func encode(_ value: Int64) throws { if element() { writer.output.integer(value) } }
    mutating func encode(_ value: UInt) throws { if element() { writer.output.integer(value) } }
    mutating func encode(_ value: UInt8) throws { if element() { writer.output.integer(value) } }
    mutating func encode(_ value: UInt16) throws { if element() { writer.output.integer(value) } }
    mutating func encode(_ value: UInt32) throws { if element() { writer.output.integer(value) } }
    mutating func encode(_ value: UInt64) throws { if element() { writer.output.integer(value) } }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        let key = JSONIndexKey(intValue: count)
        guard element() else { return }
        try JSONSlotEncoder(writer: writer, depth: writer.output.depth, codingPath: codingPath + [key]).encodeValue(
            value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let key = JSONIndexKey(intValue: count)
        _ = element()
        return writer.keyedContainer(NestedKey.self, at: codingPath + [key])
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let key = JSONIndexKey(intValue: count)
        _ = element()
        return writer.unkeyedContainer(at: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        writer.superEncoder(at: codingPath)
    }
}

struct JSONSingleValueContainer: SingleValueEncodingContainer {
    let slot: JSONSlotEncoder
    var codingPath: [any CodingKey] { slot.codingPath }
    private var writer: JSONStreamWriter { slot.writer }

    mutating func encodeNil() throws { if slot.fill() { writer.output.null() } }
    mutating func encode(_ value: Bool) throws { if slot.fill() { writer.output.bool(value) } }
    mutating func encode(_ value: String) throws { if slot.fill() { writer.output.string(value) } }
    mutating func encode(_ value: Double) throws { if slot.fill() { writer.output.float(value) } }
    mutating func encode(_ value: Float) throws { if slot.fill() { writer.output.float(value) } }
    mutating func encode(_ value: Int) throws { if slot.fill() { writer.output.integer(value) } }
    mutating func encode(_ value: Int8) throws { if slot.fill() { writer.output.integer(value) } }
    mutating func encode(_ value: Int16) throws { if slot.fill() { writer.output.integer(value) } }
    mutating func encode(_ value: Int32) throws { if slot.fill() { writer.output.integer(value) } }
    mutating func encode(_ value: Int64) throws { if slot.fill() { writer.output.integer(value) } }
    mutating func encode(_ value: UInt) throws { if slot.fill() { writer.output.integer(value) } }
    mutating func encode(_ value: UInt8) throws { if slot.fill() { writer.output.integer(value) } }
    mutating func encode(_ value: UInt16) throws { if slot.fill() { writer.output.integer(value) } }
    mutating func encode(_ value: UInt32) throws { if slot.fill() { writer.output.integer(value) } }
    mutating func encode(_ value: UInt64) throws { if slot.fill() { writer.output.integer(value) } }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        // The value takes this place itself: it fills it with its container or single value.
        guard !slot.filled else {
            writer.output.unsupported = true
            return
        }
        try slot.encodeValue(value)
    }
}
