import Foundation
import Relay
import RelayTesting
import Testing

/// Downloads asked for in parts, so that a download's memory is bounded by a part, whatever pace the disk keeps.
@Suite("S18 downloads in parts", .timeLimit(.minutes(3)))
struct DownloadPartsTests {
    /// Bytes that differ from one position to the next, so that a part out of place shows.
    private static func pattern(_ count: Int, seed: UInt8 = 0) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) &+ seed })
    }

    private func download(
        _ url: URL, partSize: Int, in folder: TemporaryFolder
    ) async throws -> (HTTPTransportResponse, Data) {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        let file = folder.url.appendingPathComponent("download.bin")
        let transport = URLSessionTransport(downloadPartSize: partSize)
        let response = try await transport.send(
            CallRequest(method: .get, url: url), writingBodyTo: file, onResponseHeaders: {})
        return (response, try Data(contentsOf: file))
    }

    @Test("S18: a download from a server that serves ranges comes in parts of the set size, whole and in order")
    func partsInOrder() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let body = Self.pattern(10_000)
        server.setDefault("/file", LoopbackServer.Reply(body: body).servingRanges())
        try await withTemporaryFolder { folder in
            let (response, written) = try await download(server.url("/file"), partSize: 4096, in: folder)
            #expect(response.status == 200)
            #expect(response.headers["Content-Length"] == "10000")
            #expect(response.headers.keys.contains { $0.lowercased() == "content-range" } == false)
            #expect(response.bytesReceived >= 10_000)
            #expect(written == body)
        }
        let requests = server.requests
        #expect(requests.map { $0.header("Range") } == ["bytes=0-4095", "bytes=4096-8191", "bytes=8192-9999"])
        #expect(requests.map { $0.header("If-Range") } == [nil, "\"loopback\"", "\"loopback\""])
    }

    @Test("S18: a body that changes between parts fails the attempt, rather than mixing two versions")
    func changedBodyFails() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script(
            "/file",
            [
                LoopbackServer.Reply(body: Self.pattern(10_000)).servingRanges(tag: "\"one\""),
                LoopbackServer.Reply(body: Self.pattern(10_000, seed: 1)).servingRanges(tag: "\"two\""),
            ])
        try await withTemporaryFolder { folder in
            let error = await #expect(throws: HTTPTransportError.self) {
                _ = try await download(server.url("/file"), partSize: 4096, in: folder)
            }
            #expect(error?.kind == .connectionLost)
            #expect(error?.message.contains("after 4096 of 10000 bytes") == true, "\(String(describing: error))")
        }
        #expect(server.requests.count == 2)
    }

    @Test("S18: a server that ignores ranges, or gives no validator, sends the whole body in one answer")
    func wholeBodyWithoutRanges() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let body = Self.pattern(10_000)
        server.setDefault("/plain", LoopbackServer.Reply(body: body))
        server.setDefault("/untagged", LoopbackServer.Reply(body: body).servingRanges(tag: nil))
        try await withTemporaryFolder { folder in
            let (plain, plainWritten) = try await download(server.url("/plain"), partSize: 4096, in: folder)
            #expect(plain.status == 200)
            #expect(plainWritten == body)
            // A first part, then the whole body from the start: later parts could not tell a changed body.
            let (untagged, untaggedWritten) = try await download(server.url("/untagged"), partSize: 4096, in: folder)
            #expect(untagged.status == 200)
            #expect(untaggedWritten == body)
        }
        #expect(server.requests(to: "/plain").count == 1)
        #expect(server.requests(to: "/untagged").map { $0.header("Range") } == ["bytes=0-4095", nil])
    }

    @Test("S18: an empty body asked for in parts is an empty download")
    func emptyBody() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/empty", LoopbackServer.Reply().servingRanges())
        try await withTemporaryFolder { folder in
            let (response, written) = try await download(server.url("/empty"), partSize: 4096, in: folder)
            #expect(response.status == 200)
            #expect(written.isEmpty)
        }
        #expect(server.requests.map { $0.header("Range") } == ["bytes=0-4095", nil])
    }

    @Test("S18: through a DataPoint, a download in parts lands whole at its destination")
    func partsThroughDataPoint() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let body = Self.pattern(10_000)
        server.setDefault("/file", LoopbackServer.Reply(body: body).servingRanges())
        // Small parts keep the test light: a download of megabytes costs seconds under ThreadSanitizer.
        let executor = HTTPExecutor(transport: URLSessionTransport(downloadPartSize: 4096))
        try await withTemporaryFolder { folder in
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
            let file = folder.url.appendingPathComponent("file.bin")
            try await DataPoint.with(storage: .volatile, executors: [.http: executor]) { point in
                let response = try await point.execute(HTTPCall(url: server.url("/file"), destination: file))
                #expect(response.status == 200)
            }
            #expect(try Data(contentsOf: file) == body)
        }
        #expect(server.requests.map { $0.header("Range") } == ["bytes=0-4095", "bytes=4096-8191", "bytes=8192-9999"])
    }
}
