import Foundation
import Relay
import RelayTesting
import Testing

/// Downloads from a real nginx on loopback.
///
/// Chunked bodies, redirects that the executor follows itself, a body cut mid-way, and a large file.
/// FoundationNetworking's download tasks stopped the process on the redirects (SIGILL in
/// `_ProtocolClient.urlProtocol(_:didLoad:)`); every download now runs as a data task that the transport writes.
@Suite(
    "S8 and S18 downloads through nginx", .serialized, .timeLimit(.minutes(2)),
    .enabled(if: Nginx.isAvailable, "nginx is not installed"))
struct NginxDownloadTests {
    /// Runs `body` with nginx serving `files` (name to bytes) and proxying `/upstream/` to the loopback server.
    private func withNginx(
        files: [String: Data], sparse: [String: Int] = [:], upstream: LoopbackServer? = nil,
        _ body: (Nginx, URL) async throws -> Void
    ) async throws {
        try await withTemporaryFolder { folder in
            let root = folder.url.appendingPathComponent("www")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            for (name, bytes) in files { try bytes.write(to: root.appendingPathComponent(name)) }
            for (name, size) in sparse {
                let file = root.appendingPathComponent(name)
                #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
                let handle = try FileHandle(forWritingTo: file)
                try handle.truncate(atOffset: UInt64(size))
                try handle.close()
            }
            let proxy = upstream.map { "location /upstream/ { proxy_pass \($0.baseURL.absoluteString)/; }" } ?? ""
            let nginx = try await Nginx(
                in: folder.url.appendingPathComponent("nginx"), root: root,
                locations: """
                    location /chunked/ { alias \(root.path)/; sub_filter_types *; sub_filter 'not-in-any-body' ''; }
                    location = /moved { return 301 /file.bin; }
                    location = /found { return 302 /file.bin; }
                    location = /temporary { return 307 /file.bin; }
                    \(proxy)
                    """)
            let downloads = folder.url.appendingPathComponent("downloads")
            try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
            do {
                try await body(nginx, downloads)
            } catch {
                await nginx.stop()
                throw error
            }
            await nginx.stop()
        }
    }

    private static func random(_ count: Int) throws -> Data {
        let source = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        defer { try? source.close() }
        return source.readData(ofLength: count)
    }

    @Test(
        "S8: chunked bodies in memory and to a file, then 301, 302 and 307 redirects downloaded: all complete, intact"
    )
    func chunkedAndRedirected() async throws {
        let small = try Self.random(5 << 20)
        let large = try Self.random(40 << 20)
        let file = try Self.random(3 << 20)
        try await withNginx(files: ["small.bin": small, "large.bin": large, "file.bin": file]) { nginx, downloads in
            try await DataPoint.with(storage: .volatile) { point in
                let inMemory = try await point.execute(HTTPCall(url: nginx.url("chunked/small.bin")))
                #expect(inMemory.status == 200)
                #expect(
                    inMemory.headers.keys.contains { $0.lowercased() == "transfer-encoding" }, "the body came chunked")
                #expect(inMemory.body == small)

                let toFile = downloads.appendingPathComponent("large.bin")
                let chunked = try await point.execute(
                    HTTPCall(url: nginx.url("chunked/large.bin"), destination: toFile))
                #expect(chunked.file == toFile)
                #expect(try Data(contentsOf: toFile) == large)

                for path in ["moved", "found", "temporary"] {
                    let destination = downloads.appendingPathComponent("\(path).bin")
                    let redirected = try await point.execute(HTTPCall(url: nginx.url(path), destination: destination))
                    #expect(redirected.status == 200)
                    #expect(redirected.url == nginx.url("file.bin"))
                    #expect(try Data(contentsOf: destination) == file, "\(path)")
                    let mode = try FileManager.default.attributesOfItem(atPath: destination.path)[.posixPermissions]
                    #expect(mode as? Int == 0o600)
                }
            }
            let left = try FileManager.default.contentsOfDirectory(atPath: downloads.path).sorted()
            #expect(left == ["found.bin", "large.bin", "moved.bin", "temporary.bin"], "no partial file is left")
        }
    }

    @Test("S18: a body cut mid-way is retried from the start; the partial file is gone and the download is whole")
    func cutMidBody() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/cut", [LoopbackServer.Reply.zeros(count: 4 << 20).cut(after: 1 << 20)])
        server.setDefault("/cut", .zeros(count: 4 << 20))
        try await withNginx(files: [:], upstream: server) { nginx, downloads in
            let destination = downloads.appendingPathComponent("cut.bin")
            try await DataPoint.with(storage: .volatile) { point in
                let call = HTTPCall(url: nginx.url("upstream/cut"), destination: destination)
                let handle = try await point.enqueue(
                    CallOperation.http(call, retryPolicy: RetryPolicy(initialDelay: .zero, jitter: .none)))
                #expect(try await handle.response.status == 200)
            }
            #expect(try Data(contentsOf: destination) == Data(count: 4 << 20))
            #expect(try FileManager.default.contentsOfDirectory(atPath: downloads.path) == ["cut.bin"])
        }
        #expect(server.requests(to: "/cut").count == 2)
    }

    @Test("S8: a 200 MB download through nginx completes on disk, whole")
    func largeDownload() async throws {
        let size = 200_000_000
        try await withNginx(files: [:], sparse: ["large.bin": size]) { nginx, downloads in
            let destination = downloads.appendingPathComponent("large.bin")
            try await DataPoint.with(storage: .volatile) { point in
                let response = try await point.execute(HTTPCall(url: nginx.url("large.bin"), destination: destination))
                #expect(response.status == 200)
            }
            let attributes = try FileManager.default.attributesOfItem(atPath: destination.path)
            #expect(attributes[.size] as? Int == size)
            #expect(try FileManager.default.contentsOfDirectory(atPath: downloads.path) == ["large.bin"])
        }
    }

    @Test("S18: nginx serves a download in parts, each asked for with If-Range; the file is whole and in order")
    func downloadInParts() async throws {
        let bytes = try Self.random(5 << 20)
        try await withNginx(files: ["file.bin": bytes]) { nginx, downloads in
            let destination = downloads.appendingPathComponent("file.bin")
            let transport = URLSessionTransport(downloadPartSize: 2 << 20)
            let response = try await transport.send(
                CallRequest(method: .get, url: nginx.url("file.bin")), writingBodyTo: destination, onResponseHeaders: {}
            )
            #expect(response.status == 200)
            #expect(response.headers.first { $0.key.lowercased() == "content-length" }?.value == String(5 << 20))
            #expect(try Data(contentsOf: destination) == bytes)
            let requests = nginx.requests
            #expect(requests.count == 3, "\(requests)")
            #expect(requests.first?.hasPrefix("GET /file.bin 206 \"bytes=0-2097151\" \"-\"") == true, "\(requests)")
            #expect(
                requests.last?.hasPrefix("GET /file.bin 206 \"bytes=4194304-5242879\" \"\\x22") == true, "\(requests)")
        }
    }
}
