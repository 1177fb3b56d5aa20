import Foundation

/// What an HTTP call got back: the result of a completed HTTP operation.
///
/// ```swift
/// let response = try await point.execute(HTTPCall(url: server.url("/user/42")))
/// print(response.status, response.prettyContent)
/// let user = try response.decode(User.self)
/// ```
public struct CallResponse: Sendable, Hashable, Codable {
    /// The status code.
    public var status: Int
    /// Response headers by name, as the server sent them.
    public var headers: [String: String]
    /// The body; empty for downloads, whose body is in ``file``.
    public var body: Data
    /// For downloads: the destination file, moved into place.
    public var file: URL?
    /// The URL that answered, after redirects.
    public var url: URL

    /// Creates a response.
    ///
    /// - Parameters:
    ///   - status: The status code.
    ///   - headers: Response headers.
    ///   - body: The body.
    ///   - file: For downloads, the destination file.
    ///   - url: The URL that answered.
    public init(status: Int, headers: [String: String] = [:], body: Data = Data(), file: URL? = nil, url: URL) {
        self.status = status
        self.headers = headers
        self.body = body
        self.file = file
        self.url = url
    }

    /// The value of a header, by case-insensitive name.
    ///
    /// - Parameter name: The header's name.
    /// - Returns: Its value, if the response had it.
    public func header(_ name: String) -> String? {
        headers.headerValue(name)
    }

    /// The body as UTF-8 text; invalid bytes become replacement characters.
    public var rawString: String { String(decoding: body, as: UTF8.self) }

    /// The body pretty-printed when it is JSON, with sorted keys; otherwise ``rawString``.
    public var prettyContent: String {
        guard let object = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]),
            let pretty = try? JSONSerialization.data(
                withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed])
        else { return rawString }
        return String(decoding: pretty, as: UTF8.self)
    }

    /// Decodes the JSON body.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder; a default `JSONDecoder` unless given.
    /// - Returns: The decoded value.
    /// - Throws: ``RelayError`` with ``RelayError/Code/responseDecoding``, naming the type and the status.
    public func decode<Value: Decodable>(_ type: Value.Type, using decoder: JSONDecoder = JSONDecoder())
        throws(RelayError) -> Value
    {
        do {
            return try decoder.decode(type, from: body)
        } catch {
            throw RelayError(
                .responseDecoding,
                "the body of a \(status) response from \(url.redactedForDisplay) does not decode as \(Value.self): \(error)"
            )
        }
    }
}

extension CallResponse {
    /// The response as an operation's result bytes.
    var encoded: Data {
        let url = url.absoluteString
        // Ten bytes bound each length's varint: one allocation for the whole response.
        var capacity = 40 + url.utf8.count + body.count
        for (name, value) in headers { capacity += 20 + name.utf8.count + value.utf8.count }
        var writer = ByteWriter(capacity: capacity)
        writer.varint(UInt64(max(0, status)))
        writer.string(url)
        writer.varint(UInt64(headers.count))
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            writer.string(name)
            writer.string(value)
        }
        writer.blob(body)
        writer.optional(file) { writer, file in writer.string(file.absoluteString) }
        return Data(writer.bytes)
    }

    /// Reads the result bytes of a completed HTTP operation, as ``CallResult/completed(_:)`` holds them; a handle's
    /// ``CallHandle/response`` reads them for you.
    ///
    /// - Parameter data: The bytes, from the ``CallResult`` of an HTTP operation.
    /// - Throws: ``RelayError`` with ``RelayError/Code/responseDecoding`` when the bytes are not a response.
    public init(decoding data: Data) throws(RelayError) {
        guard let decoded = try? Self(encoded: data) else {
            throw RelayError(.responseDecoding, "the result is not an HTTP response; was the operation an HTTP call?")
        }
        self = decoded
    }

    /// Reads ``encoded`` bytes, as a store keeps them.
    init(encoded data: Data) throws(ByteReader.Malformed) {
        let decoded = data.withUnsafeBytes { bytes in try? Self.read(from: bytes) }
        guard let decoded else { throw ByteReader.Malformed() }
        self = decoded
    }

    private static func read(from bytes: UnsafeRawBufferPointer) throws(ByteReader.Malformed) -> CallResponse {
        var reader = ByteReader(bytes)
        let status = try reader.varint()
        guard let url = URL(string: try reader.string()) else { throw ByteReader.Malformed() }
        var headers: [String: String] = [:]
        for _ in 0..<(try reader.count()) { headers[try reader.string()] = try reader.string() }
        let body = try reader.blob()
        let file = try reader.optional { (reader) throws(ByteReader.Malformed) in try reader.string() }
        guard reader.isAtEnd else { throw ByteReader.Malformed() }
        return CallResponse(
            status: Int(status), headers: headers, body: body, file: file.flatMap { URL(string: $0) }, url: url)
    }
}

extension URL {
    /// The URL without user, password, query or fragment, for messages that people and logs read.
    var redactedForDisplay: String {
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: false) else { return "a URL" }
        components.user = nil
        components.password = nil
        components.query = nil
        components.fragment = nil
        return components.string ?? "a URL"
    }
}
