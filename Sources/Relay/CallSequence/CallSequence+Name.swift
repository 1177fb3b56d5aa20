extension CallSequence {
    /// The name of a sequence, unique within a DataPoint.
    ///
    /// Every DataPoint has ``data``, ``downloads`` and ``uploads``, each with a bunch size of 1.
    public struct Name: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral,
        CustomStringConvertible
    {
        /// The name as written.
        public let rawValue: String

        /// Creates a name.
        ///
        /// - Parameter rawValue: The name.
        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// Creates a name from a string literal.
        ///
        /// - Parameter value: The name.
        public init(stringLiteral value: String) {
            self.rawValue = value
        }

        /// The default sequence for general calls.
        public static let data: Name = "data"
        /// The sequence for downloads.
        public static let downloads: Name = "downloads"
        /// The sequence for uploads.
        public static let uploads: Name = "uploads"

        /// The name.
        public var description: String { rawValue }
    }

    /// How a sequence orders the start of its ready operations.
    ///
    /// An extensible struct rather than an enum: a release may add algorithms, and a new case of a public enum would
    /// break every exhaustive `switch` over it. Compare an algorithm with `==`. Its raw value is the name a store and
    /// a plan file keep; ``init(rawValue:)`` knows the algorithms of this release only.
    public struct Algorithm: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The algorithms this release knows; the package's own code switches over them.
        package enum Value: String, Sendable, Hashable {
            case flat
            case commitGraph
        }

        package let value: Value

        /// Dependencies, then priority, then commit order: the default.
        ///
        /// BartlebysCore's semantics.
        public static let flat = Algorithm(.flat)

        /// As `flat`, and no operation of a later commit starts until every operation of earlier commits in this
        /// sequence has finished (YapDatabaseCloudCore semantics).
        public static let commitGraph = Algorithm(.commitGraph)

        private init(_ value: Value) {
            self.value = value
        }

        /// The algorithm of this name, or `nil` when this release knows none by that name.
        ///
        /// - Parameter rawValue: `flat` or `commitGraph`.
        public init?(rawValue: String) {
            guard let value = Value(rawValue: rawValue) else { return nil }
            self.value = value
        }

        /// Its name: `flat` or `commitGraph`.
        public var rawValue: String { value.rawValue }

        /// Its name.
        public var description: String { rawValue }

        /// Decodes an algorithm from its name.
        ///
        /// - Parameter decoder: The decoder.
        /// - Throws: `DecodingError` when the name is not one this release knows.
        public init(from decoder: any Decoder) throws {
            let name = try decoder.singleValueContainer().decode(String.self)
            guard let algorithm = Algorithm(rawValue: name) else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(
                        codingPath: decoder.codingPath, debugDescription: "no algorithm is named \(name)"))
            }
            self = algorithm
        }

        /// Encodes its name.
        ///
        /// - Parameter encoder: The encoder.
        /// - Throws: What the encoder throws.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
    }
}
