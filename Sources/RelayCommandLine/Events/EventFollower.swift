import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Follows the events of a plan that another process runs on a store, through its ``EventBroadcast``.
enum EventFollower {
    /// Prints the events of what runs on `store` as JSON lines: of the process running on a folder until it ends, or of
    /// every process of a database's until interrupted.
    static func follow(_ store: StoreLocation) async throws -> ExitStatus {
        switch store {
        case .folder(let folder):
            guard let connection = connect(to: folder) else {
                Output.error("relay: no relay process is running on \(folder.path); relay events prints its history")
                return .failure
            }
            await copyLines(from: connection)
            return .success
        case .remote(let url, let kind):
            let status = try await kind.withDataPoint(url) { point in
                let events = point.events()
                Output.line(#"{"event":"following"}"#)
                for await event in events {
                    Output.line(EventLine.json(event, call: nil))
                }
                return ExitStatus.success.rawValue
            }
            return ExitStatus(rawValue: status) ?? .failure
        }
    }

    /// Connects to the store's running plan, or returns `nil` when no process serves its events.
    static func connect(to store: URL) -> Int32? {
        guard var address = EventBroadcast.unixAddress(EventBroadcast.socketPath(of: store)) else { return nil }
        #if canImport(Glibc)
            let connection = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let connection = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard connection >= 0 else { return nil }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Foundation.connect(connection, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            closeSocket(connection)
            return nil
        }
        return connection
    }

    /// Copies the lines the running plan sends to standard output until it ends; the blocking reads run on a
    /// thread of their own, outside the cooperative pool.
    static func copyLines(from connection: Int32) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                var buffer = [UInt8](repeating: 0, count: 64 << 10)
                while true {
                    let count = read(connection, &buffer, buffer.count)
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { break }
                    FileHandle.standardOutput.write(Data(buffer[0..<count]))
                }
                closeSocket(connection)
                continuation.resume()
            }
        }
    }
}
