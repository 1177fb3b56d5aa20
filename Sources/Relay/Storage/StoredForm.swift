import Foundation

// The binary forms of one operation and one result, for stores that keep them in fields of their own (a row per
// operation) rather than inside records.

extension CallOperation {
    /// The operation in Relay's compact binary form, snapshot included, which ``init(encoded:)`` reads back.
    ///
    /// It is the form the file store writes inside its records: a later version of Relay reads what an earlier one
    /// wrote.
    public func encoded() -> Data {
        var writer = ByteWriter()
        RecordCodec.encode(self, into: &writer)
        return Data(writer.bytes)
    }

    /// Reads an operation that ``encoded()`` wrote.
    ///
    /// - Parameter encoded: The bytes of one operation, and nothing else.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/corruptStore`` when the bytes are not one whole operation.
    public init(encoded: Data) throws(RelayError) {
        self = try Self.decode(encoded, as: "operation") { (reader) throws(ByteReader.Malformed) in
            try RecordCodec.decodeOperation(from: &reader)
        }
    }

    /// Decodes one whole value of a stored form, or throws naming what the bytes failed to be.
    static func decode<Value>(
        _ encoded: Data,
        as what: String,
        _ body: (inout ByteReader) throws(ByteReader.Malformed) -> Value
    ) throws(RelayError) -> Value {
        let value = encoded.withUnsafeBytes { (bytes) -> Value? in
            var reader = ByteReader(bytes)
            guard let value = try? body(&reader), reader.isAtEnd else { return nil }
            return value
        }
        guard let value else { throw RelayError(.corruptStore, "the \(encoded.count) bytes are not one whole \(what)") }
        return value
    }
}

extension CallResult {
    /// The terminal state in Relay's compact binary form, which ``init(encoded:)`` reads back.
    public func encoded() -> Data {
        var writer = ByteWriter()
        RecordCodec.encode(self, into: &writer)
        return Data(writer.bytes)
    }

    /// Reads a terminal state that ``encoded()`` wrote.
    ///
    /// - Parameter encoded: The bytes of one result, and nothing else.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/corruptStore`` when the bytes are not one whole result.
    public init(encoded: Data) throws(RelayError) {
        self = try CallOperation.decode(encoded, as: "result") { (reader) throws(ByteReader.Malformed) in
            try RecordCodec.decodeResult(from: &reader)
        }
    }
}
