import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads HTTP/1.1 requests, one after another, from a connected socket.
struct RequestReader {
    private let socket: Int32
    private var buffer: [UInt8] = []

    init(socket: Int32) {
        self.socket = socket
    }

    /// The next request and whether the client asked to close the connection after it; `nil` when the connection
    /// ends or sends something that is not HTTP.
    mutating func next(connection: Int) -> (LoopbackServer.Request, wantsClose: Bool)? {
        guard let headEnd = readUntil([13, 10, 13, 10]) else { return nil }
        let head = String(decoding: buffer[..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        if headers["expect"]?.lowercased() == "100-continue" {
            let interim = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
            _ = interim.withUnsafeBytes { write(socket, $0.baseAddress, $0.count) }
        }
        var body: [UInt8]
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            guard let chunked = readChunked() else { return nil }
            body = chunked
        } else {
            let length = Int(headers["content-length"] ?? "0") ?? 0
            guard fill(length) else { return nil }
            body = Array(buffer[..<length])
            buffer.removeFirst(length)
        }
        let request = LoopbackServer.Request(
            method: String(requestLine[0]),
            target: String(requestLine[1]),
            headers: headers,
            body: Data(body),
            connection: connection
        )
        return (request, headers["connection"]?.lowercased() == "close")
    }

    private mutating func readChunked() -> [UInt8]? {
        var body: [UInt8] = []
        while true {
            guard let lineEnd = readUntil([13, 10]) else { return nil }
            let sizeText = String(decoding: buffer[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            buffer.removeFirst(lineEnd + 2)
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { return nil }
            if size == 0 {
                // Trailers, if any, end with an empty line.
                while let end = readUntil([13, 10]) {
                    buffer.removeFirst(end + 2)
                    if end == 0 { return body }
                }
                return nil
            }
            guard fill(size + 2) else { return nil }
            body += buffer[..<size]
            buffer.removeFirst(size + 2)
        }
    }

    /// Reads until `marker` is buffered; returns where it starts.
    private mutating func readUntil(_ marker: [UInt8]) -> Int? {
        var searchFrom = 0
        while true {
            if buffer.count >= marker.count {
                for start in searchFrom...(buffer.count - marker.count)
                where buffer[start..<start + marker.count].elementsEqual(marker) {
                    return start
                }
                searchFrom = buffer.count - marker.count + 1
            }
            guard receive() else { return nil }
        }
    }

    private mutating func fill(_ count: Int) -> Bool {
        while buffer.count < count {
            guard receive() else { return false }
        }
        return true
    }

    private mutating func receive() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let received = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if received < 0 && errno == EINTR { continue }
            guard received > 0 else { return false }
            buffer += chunk[..<received]
            return true
        }
    }
}
