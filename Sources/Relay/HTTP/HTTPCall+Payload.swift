import Foundation

extension HTTPCall {
    /// The first byte of a binary payload; JSON payloads, which earlier versions stored, start with `{`.
    private static let binaryMark: UInt8 = 0xB1
    private static let binaryVersion: UInt8 = 1
    /// The same layout, from a call enqueued where a ``RequestAuthorizer`` would authorize it: it is never sent
    /// without one (see ``requiresAuthorizer(_:)``).
    private static let authorizedVersion: UInt8 = 2

    /// Whether an HTTP operation's payload says that the call goes out only through an executor with an authorizer.
    ///
    /// One byte is read, so that the pipeline can ask whenever it picks an executor.
    static func requiresAuthorizer(_ payload: Data) -> Bool {
        payload.count > 1 && payload.first == binaryMark && payload[payload.startIndex + 1] == authorizedVersion
    }

    /// The payload of the same call, marked as one that is never sent without an authorizer.
    static func requiringAuthorizer(_ payload: Data) -> Data {
        guard payload.count > 1, payload.first == binaryMark, payload[payload.startIndex + 1] == binaryVersion else {
            return payload
        }
        var marked = payload
        marked[marked.startIndex + 1] = authorizedVersion
        return marked
    }

    /// The call as an operation's payload: a compact binary form with sorted headers, so the same call always makes
    /// the same bytes.
    ///
    /// Every attempt reads the payload again, and decoding JSON cost more CPU per request than the rest of the
    /// executor together.
    var payload: Data {
        var writer = ByteWriter()
        writer.byte(Self.binaryMark)
        writer.byte(Self.binaryVersion)
        writer.string(method.rawValue)
        writer.string(url.absoluteString)
        writer.varint(UInt64(headers.count))
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            writer.string(name)
            writer.string(value)
        }
        switch body {
        case .none:
            writer.byte(0)
        case .data(let data):
            writer.byte(1)
            writer.blob(data)
        case .file(let file):
            writer.byte(2)
            writer.string(file.absoluteString)
        }
        Self.write(acceptedStatusCodes, default: Self.successStatusCodes, to: &writer)
        Self.write(retryableStatusCodes, default: Self.transientStatusCodes, to: &writer)
        writer.duration(timeout)
        writer.optional(destination) { writer, destination in writer.string(destination.absoluteString) }
        writer.duration(maximumRetryAfter)
        writer.varint(UInt64(max(0, maximumRedirects)))
        // Last and only when set, so that a call without it makes the bytes it always made.
        if let responseCollection { writer.string(responseCollection) }
        return Data(writer.bytes)
    }

    /// Reads a call from an operation's payload, binary or JSON.
    init(payload: Data) throws(RelayError) {
        guard payload.first == Self.binaryMark else {
            do {
                self = try JSONDecoder().decode(HTTPCall.self, from: payload)
                return
            } catch {
                throw RelayError(.invalidArgument, "the operation's payload is not an HTTP call")
            }
        }
        let decoded = payload.withUnsafeBytes { bytes in try? Self.read(from: bytes) }
        guard let decoded else { throw RelayError(.invalidArgument, "the operation's payload is not an HTTP call") }
        self = decoded
    }

    private static func read(from bytes: UnsafeRawBufferPointer) throws(ByteReader.Malformed) -> HTTPCall {
        var reader = ByteReader(bytes)
        guard try reader.byte() == binaryMark, [binaryVersion, authorizedVersion].contains(try reader.byte()) else {
            throw ByteReader.Malformed()
        }
        let method = Method(rawValue: try reader.string())
        let url = try Self.url(try reader.string())
        var headers: [String: String] = [:]
        let headerCount = try reader.count()
        headers.reserveCapacity(headerCount)
        for _ in 0..<headerCount { headers[try reader.string()] = try reader.string() }
        let body: Body
        switch try reader.byte() {
        case 0: body = .none
        case 1: body = .data(try reader.blob())
        case 2: body = .file(try Self.url(try reader.string()))
        default: throw ByteReader.Malformed()
        }
        let accepted = try readStatusCodes(default: successStatusCodes, from: &reader)
        let retryable = try readStatusCodes(default: transientStatusCodes, from: &reader)
        let timeout = try reader.duration()
        let destination = try reader.optional { (reader) throws(ByteReader.Malformed) in
            try Self.url(try reader.string())
        }
        let maximumRetryAfter = try reader.duration()
        let maximumRedirects = try reader.varint()
        let responseCollection = reader.isAtEnd ? nil : try reader.string()
        guard maximumRedirects <= UInt64(Int32.max), reader.isAtEnd else { throw ByteReader.Malformed() }
        return HTTPCall(
            method: method,
            url: url,
            headers: headers,
            body: body,
            acceptedStatusCodes: accepted,
            retryableStatusCodes: retryable,
            timeout: timeout,
            destination: destination,
            maximumRetryAfter: maximumRetryAfter,
            maximumRedirects: Int(maximumRedirects),
            responseCollection: responseCollection
        )
    }

    private static func url(_ text: String) throws(ByteReader.Malformed) -> URL {
        guard let url = URL(string: text) else { throw ByteReader.Malformed() }
        return url
    }

    /// Status codes as a mark for the usual set, or as inclusive ranges.
    private static func write(_ codes: Set<Int>, default usual: Set<Int>, to writer: inout ByteWriter) {
        if codes == usual {
            writer.byte(0)
            return
        }
        writer.byte(1)
        var ranges: [ClosedRange<Int>] = []
        for code in codes.sorted() {
            if let last = ranges.last, last.upperBound + 1 == code {
                ranges[ranges.count - 1] = last.lowerBound...code
            } else {
                ranges.append(code...code)
            }
        }
        writer.varint(UInt64(ranges.count))
        for range in ranges {
            writer.signed(Int64(range.lowerBound))
            writer.varint(UInt64(range.upperBound - range.lowerBound))
        }
    }

    private static func readStatusCodes(
        default usual: Set<Int>,
        from reader: inout ByteReader
    ) throws(ByteReader.Malformed) -> Set<Int> {
        switch try reader.byte() {
        case 0:
            return usual
        case 1:
            var codes = Set<Int>()
            for _ in 0..<(try reader.count()) {
                let low = Int(try reader.signed())
                let width = try reader.varint()
                guard width < 1000 else { throw ByteReader.Malformed() }
                let (high, overflow) = low.addingReportingOverflow(Int(width))
                guard !overflow else { throw ByteReader.Malformed() }
                codes.formUnion(low...high)
            }
            return codes
        default:
            throw ByteReader.Malformed()
        }
    }
}
