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
    /// An open enum: a release may add algorithms, so a `switch` over it needs a `default`.
    public enum Algorithm: String, Sendable, Hashable, Codable {
        /// Dependencies, then priority, then commit order (BartlebysCore semantics). The default.
        case flat
        /// As `flat`, and no operation of a later commit starts until every operation of earlier commits in this
        /// sequence has finished (YapDatabaseCloudCore semantics).
        case commitGraph
    }
}
