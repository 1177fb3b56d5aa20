import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real nginx on 127.0.0.1, run as a child process with a configuration of its own in a temporary folder, and
/// stopped by ``stop()``.
///
/// It serves `root` and answers the `locations` it is given (nginx `location` blocks). CI installs nginx; elsewhere
/// the tests that need it are skipped when it is missing, which the test run reports.
final class Nginx: Sendable {
    let baseURL: URL
    /// Where nginx logs each request: method, path, status, and the `Range` and `If-Range` it named.
    let accessLog: URL
    private let process: CommandProcess

    /// Where nginx is installed, if it is.
    static let executable: URL? = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
        .map(URL.init(fileURLWithPath:))
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }

    /// Whether tests that need nginx run: where it is installed, and always in CI, which installs it.
    static var isAvailable: Bool { executable != nil || ProcessInfo.processInfo.environment["CI"] != nil }

    /// Starts nginx on a free port; returns once it listens.
    ///
    /// - Parameters:
    ///   - folder: A folder for its configuration, temporary files and log; created if missing.
    ///   - root: The folder it serves.
    ///   - locations: `location` blocks added to the server.
    /// - Throws: When nginx is missing or does not start.
    init(in folder: URL, root: URL, locations: String = "") async throws {
        let executable = try #require(Self.executable, "nginx is not installed: apt-get install nginx-light")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let temporary = folder.appendingPathComponent("temporary").path
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        // A port that was free a moment ago may be taken by the time nginx binds it: try a few.
        for _ in 0..<5 {
            let port = try Self.freePort()
            let configuration = folder.appendingPathComponent("nginx.conf")
            let text = """
                daemon off;
                master_process off;
                error_log stderr notice;
                pid \(folder.path)/nginx.pid;
                events { worker_connections 64; }
                http {
                    log_format relay '$request_method $uri $status "$http_range" "$http_if_range"';
                    access_log \(folder.path)/access.log relay;
                    default_type application/octet-stream;
                    client_body_temp_path \(temporary);
                    proxy_temp_path \(temporary);
                    fastcgi_temp_path \(temporary);
                    uwsgi_temp_path \(temporary);
                    scgi_temp_path \(temporary);
                    server {
                        listen 127.0.0.1:\(port);
                        root \(root.path);
                        \(locations)
                    }
                }
                """
            try Data(text.utf8).write(to: configuration)
            let process = try CommandProcess(
                executable: executable, ["-p", folder.path, "-c", configuration.path, "-e", "stderr"], in: folder)
            // nginx reports its version once its sockets listen, or ends when it cannot bind.
            await process.waitForError(containing: "nginx/")
            if process.err.contains(where: { $0.contains("nginx/") }) {
                self.process = process
                accessLog = folder.appendingPathComponent("access.log")
                baseURL = URL(string: "http://127.0.0.1:\(port)")!
                return
            }
            _ = await process.exit()
        }
        throw NginxError(message: "nginx did not start")
    }

    func url(_ path: String) -> URL { baseURL.appendingPathComponent(path) }

    /// The requests logged so far, one line each.
    var requests: [String] {
        ((try? String(contentsOf: accessLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func stop() async {
        // A throwaway server: nothing of it needs to outlive the test, so it ends at once.
        process.send(SIGKILL)
        _ = await process.exit()
    }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 }
        }
        let named = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard bound, named else { throw NginxError(message: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

struct NginxError: Error {
    var message: String
}
