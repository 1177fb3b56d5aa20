import Foundation
import RelayTesting
import Testing

@testable import Relay

/// The document's one-pass JSON encoder, against `JSONEncoder` itself.
@Suite("S19 models encode as JSONEncoder encodes them", .timeLimit(.minutes(3)))
struct ModelEncoderTests {
    /// The JSON value of `data`, to compare two encodings whatever the order of their keys.
    private static func parsed(_ data: Data) throws -> NSObject {
        try #require(JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? NSObject)
    }

    /// Encodes `value` both ways and checks that they are the same JSON and that it reads back as `value`.
    private static func expectSameJSON<Value: Codable & Equatable>(_ value: Value) throws {
        let ours = try #require(ModelEncoder.encodeInOnePass(value))
        let foundation = try JSONEncoder().encode(value)
        #expect(try parsed(ours) == parsed(foundation), "\(String(decoding: ours, as: UTF8.self))")
        #expect(try JSONDecoder().decode(Value.self, from: ours) == value)
    }

    struct Inner: Codable, Equatable {
        var label: String
        var values: [Double]
        var empty: Empty
    }

    struct Empty: Codable, Equatable {}

    enum Shape: Codable, Equatable {
        case circle(radius: Double)
        case polygon([Int], closed: Bool)
        case none
    }

    struct Everything: Codable, Equatable {
        var id = UUID()
        var name = "quote \" backslash \\ slash / tab \t newline \n bell \u{7} é 🚀"
        var count = Int.min
        var big = UInt64.max
        var small: Int8 = -128
        var ratio = 0.1
        var whole = 1.0
        var negativeZero = -0.0
        var huge = 1e300
        var tiny = Double.leastNonzeroMagnitude
        var single: Float = 0.1
        var flag = true
        var missing: String?
        var present: String? = "here"
        var when = Date(timeIntervalSinceReferenceDate: 123_456.789)
        var blob = Data([0, 1, 2, 250, 255])
        var link = URL(string: "https://example.com/a/b?c=d&e=f")!
        var tags = ["a", "", "c\u{0}d"]
        var byName = ["one": 1, "two": 2]
        var byNumber = [1: "one", 2: "two"]
        var inner = Inner(label: "in", values: [1, 2.5, -3], empty: Empty())
        var nested: [[Inner?]] = [[nil, Inner(label: "deep", values: [], empty: Empty())], []]
        var shapes: [Shape] = [.circle(radius: 2), .polygon([1, 2, 3], closed: true), .none]
    }

    @Test("S19: a model of every common kind of field encodes to the JSON JSONEncoder writes, and reads back")
    func everyFieldKind() throws {
        try Self.expectSameJSON(Everything())
        try Self.expectSameJSON(["top", "level", "array"])
        try Self.expectSameJSON("a top-level string")
        try Self.expectSameJSON(42)
        try Self.expectSameJSON([Shape.none])
        try Self.expectSameJSON([String: [Int]]())
        try Self.expectSameJSON(Dictionary(uniqueKeysWithValues: (0..<100).map { ("key \($0)", $0) }))
        #expect(try ModelEncoder.encode(Empty()) == JSONEncoder().encode(Empty()))
    }

    @Test("S19: strings are escaped as JSONEncoder escapes them, byte for byte")
    func escaping() throws {
        for text in ["plain", "\"/\\", "\u{1}\u{8}\u{c}\u{1f}", "line\r\nnext", "emoji 👩‍👩‍👧 and ünïcode"] {
            #expect(try ModelEncoder.encode(text) == JSONEncoder().encode(text))
        }
    }

    /// A subclass that encodes its superclass's keys into the same container: the container is asked for twice.
    class Base: Codable {
        var base = "base"
    }

    final class Derived: Base, Equatable {
        var extra = 7
        enum Keys: CodingKey { case extra }

        override init() { super.init() }

        required init(from decoder: any Decoder) throws {
            extra = try decoder.container(keyedBy: Keys.self).decode(Int.self, forKey: .extra)
            try super.init(from: decoder)
        }

        override func encode(to encoder: any Encoder) throws {
            try super.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(extra, forKey: .extra)
        }

        static func == (lhs: Derived, rhs: Derived) -> Bool { lhs.base == rhs.base && lhs.extra == rhs.extra }
    }

    /// Writes into a nested container after its parent went on, and through a super encoder.
    struct OutOfOrder: Codable, Equatable {
        enum Keys: CodingKey { case first, second, parent }
        var first = 1
        var second = 2

        init() {}

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            let nested = try container.nestedContainer(keyedBy: Keys.self, forKey: .first)
            first = try nested.decode(Int.self, forKey: .first)
            second = try nested.decode(Int.self, forKey: .second)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            var nested = container.nestedContainer(keyedBy: Keys.self, forKey: .first)
            try nested.encode(first, forKey: .first)
            try container.encode("between", forKey: .second)
            try nested.encode(second, forKey: .second)
            try "parent".encode(to: container.superEncoder(forKey: .parent))
        }
    }

    /// Encodes one key twice: `JSONEncoder` keeps the second value.
    struct Twice: Codable, Equatable {
        enum Keys: CodingKey { case value }
        var value = 2

        init() {}
        init(from decoder: any Decoder) throws {
            value = try decoder.container(keyedBy: Keys.self).decode(Int.self, forKey: .value)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(1, forKey: .value)
            try container.encode(value, forKey: .value)
        }
    }

    @Test("S19: uses of the Encoder API that one pass cannot follow give JSONEncoder's result")
    func fallsBack() throws {
        let derived = Derived()
        #expect(ModelEncoder.encodeInOnePass(derived) == nil)
        #expect(try Self.parsed(ModelEncoder.encode(derived)) == Self.parsed(JSONEncoder().encode(derived)))
        #expect(try JSONDecoder().decode(Derived.self, from: ModelEncoder.encode(derived)) == derived)
        let outOfOrder = OutOfOrder()
        #expect(ModelEncoder.encodeInOnePass(outOfOrder) == nil)
        #expect(try Self.parsed(ModelEncoder.encode(outOfOrder)) == Self.parsed(JSONEncoder().encode(outOfOrder)))
        let price = ["price": Decimal(string: "12.34")!]
        #expect(ModelEncoder.encodeInOnePass(price) == nil)
        #expect(try ModelEncoder.encode(price) == JSONEncoder().encode(price))
        #expect(try JSONDecoder().decode(Twice.self, from: ModelEncoder.encode(Twice())) == Twice())
    }

    @Test("S19: what JSONEncoder refuses is refused with its error, and a transaction's upsert leaves nothing")
    func refusals() async throws {
        #expect(throws: EncodingError.self) { try ModelEncoder.encode(["ratio": Double.infinity]) }
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(["ratio": Double.infinity]) }
        #expect(throws: EncodingError.self) { try ModelEncoder.encode([Float.nan]) }
        try await withTemporaryFolder { folder in
            try await DataPoint.with(storage: .file(at: folder.url)) { point in
                try point.register(Reading.self, as: "readings")
                let error = await #expect(throws: RelayError.self) {
                    try await point.transaction { tx in try tx.upsert(Reading(id: 1, value: .nan)) }
                }
                #expect(error?.code == .modelEncoding)
                #expect(try point.models(Reading.self).isEmpty)
            }
        }
    }

    struct Reading: Model, Equatable {
        let id: Int
        var value: Double
        var when = Date(timeIntervalSinceReferenceDate: 0)
        var raw = Data("raw".utf8)
        var source = URL(string: "https://example.com/sensor")!
    }

    @Test("S19: a model upserted through a file store reads back the same after the store reopens")
    func persistsThroughTheStore() async throws {
        try await withTemporaryFolder { folder in
            let reading = Reading(id: 7, value: 21.5)
            let models = Everything()
            try await DataPoint.with(storage: .file(at: folder.url)) { point in
                try point.register(Reading.self, as: "readings")
                try await point.transaction { tx in
                    try tx.upsert(reading)
                    try tx.setValue(models, forKey: "everything")
                }
            }
            try await DataPoint.with(storage: .file(at: folder.url)) { point in
                try point.register(Reading.self, as: "readings")
                #expect(try point.models(Reading.self) == [reading])
                #expect(try point.value(Everything.self, forKey: "everything") == models)
            }
        }
    }
}
