import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Downloads in parts: byte ranges asked for one after the other, so that no more than a part is ever in memory.
extension URLSessionTransport {
    /// Whether a request's body may be asked for in parts: a `GET` with no body and no range of its own.
    static func downloadsInParts(_ request: CallRequest) -> Bool {
        guard request.method == .get, case .none = request.body else { return false }
        return request.headers.headerValue("Range") == nil && request.headers.headerValue("If-Range") == nil
    }

    /// Downloads `whole` into `sink` in parts of `partSize` bytes, when the server serves ranges.
    func download(
        _ whole: URLRequest,
        inPartsOf partSize: Int,
        to sink: BodyFile,
        _ onResponseHeaders: @escaping @Sendable () -> Void
    ) async throws -> HTTPTransportResponse {
        var first = whole
        first.setValue("bytes=0-\(partSize - 1)", forHTTPHeaderField: "Range")
        let answer = try await exchange(first, uploading: .none, into: .written(sink), onResponseHeaders)
        var counted = Counted(answer)
        guard answer.status == 206, let range = ByteRange(answer.headers), range.first == 0 else {
            // The whole body (200), or an answer that is not about the body (a redirect, an error), as asked for
            // without a range; an empty resource has no first byte to give (416).
            guard answer.status == 416 || answer.status == 206 else { return answer }
            return try await startOver(whole, to: sink, counted)
        }
        guard range.last + 1 < range.length else { return counted.whole(answer, length: range.length) }
        guard let validator = Self.validator(answer.headers) else {
            return try await startOver(whole, to: sink, counted)
        }
        var next = range.last + 1
        while next < range.length {
            try Task.checkCancellation()
            let last = range.length - next <= partSize ? range.length - 1 : next + partSize - 1
            var part = whole
            part.setValue("bytes=\(next)-\(last)", forHTTPHeaderField: "Range")
            part.setValue(validator, forHTTPHeaderField: "If-Range")
            let reply = try await exchange(part, uploading: .none, into: .written(sink), {})
            counted.add(reply)
            guard reply.status == 206,
                ByteRange(reply.headers) == ByteRange(first: next, last: last, length: range.length)
            else {
                throw HTTPTransportError(
                    .connectionLost,
                    "the download changed, or its server stopped serving ranges, after \(next) of \(range.length) "
                        + "bytes (status \(reply.status))")
            }
            next = last + 1
        }
        return counted.whole(answer, length: range.length)
    }

    /// Asks again for the whole body in one response, from the start of the file.
    private func startOver(_ whole: URLRequest, to sink: BodyFile, _ counted: Counted) async throws
        -> HTTPTransportResponse
    {
        try sink.restart()
        var counted = counted
        var answer = try await exchange(whole, uploading: .none, into: .written(sink), {})
        counted.add(answer)
        answer.bytesSent = counted.sent
        answer.bytesReceived = counted.received
        return answer
    }

    /// What tells a later part that the resource is still the one the first part came from: a strong entity tag,
    /// or the modification date.
    private static func validator(_ headers: [String: String]) -> String? {
        if let tag = headers.headerValue("ETag"), !tag.hasPrefix("W/") { return tag }
        return headers.headerValue("Last-Modified")
    }
}

/// The bytes that the requests of one download sent and received.
private struct Counted {
    var sent: Int
    var received: Int

    init(_ first: HTTPTransportResponse) {
        sent = first.bytesSent
        received = first.bytesReceived
    }

    mutating func add(_ response: HTTPTransportResponse) {
        sent += response.bytesSent
        received += response.bytesReceived
    }

    /// The first part's answer as the whole body's: `200`, with the whole length and no range.
    func whole(_ first: HTTPTransportResponse, length: Int) -> HTTPTransportResponse {
        var headers = first.headers.filter {
            $0.key.lowercased() != "content-range" && $0.key.lowercased() != "content-length"
        }
        headers["Content-Length"] = String(length)
        return HTTPTransportResponse(
            status: 200, headers: headers, body: Data(), bytesSent: sent, bytesReceived: received)
    }
}

/// A `Content-Range: bytes FIRST-LAST/LENGTH` header, with a known length.
struct ByteRange: Equatable {
    let first: Int
    let last: Int
    let length: Int

    init(first: Int, last: Int, length: Int) {
        self.first = first
        self.last = last
        self.length = length
    }

    init?(_ headers: [String: String]) {
        guard let value = headers.headerValue("Content-Range"), value.hasPrefix("bytes ") else { return nil }
        let parts = value.dropFirst("bytes ".count).split(separator: "/")
        guard parts.count == 2, let length = Int(parts[1].trimmingCharacters(in: .whitespaces)) else { return nil }
        let bounds = parts[0].split(separator: "-")
        guard bounds.count == 2, let first = Int(bounds[0].trimmingCharacters(in: .whitespaces)),
            let last = Int(bounds[1].trimmingCharacters(in: .whitespaces)), first <= last, last < length
        else { return nil }
        self.init(first: first, last: last, length: length)
    }
}
