import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Serves a running plan's events, one JSON line each, on a Unix socket in the store's folder (`events.sock`), to
/// every `relay events --follow` that connects; the followers read as the lines are written, with no polling.
///
/// Accepting runs on a thread of its own with a blocking socket, outside Swift concurrency. A follower that cannot
/// keep up or goes away is dropped, and a run never waits for one. When the socket cannot be made (a folder whose
/// path is too long for a socket's address, say), the run goes on without it.
final class EventBroadcast: Sendable {
    private struct State {
        var listener: Int32 = -1
        var followers: [Int32] = []
    }

    private let state = Mutex(State())
    private let path: String
    private let accepting = DispatchGroup()

    init(store: URL) {
        path = Self.socketPath(of: store)
        guard let listener = Self.listen(at: path) else { return }
        state.withLock { $0.listener = listener }
        accepting.enter()
        Thread.detachNewThread { [self] in
            defer { accepting.leave() }
            while true {
                let follower = accept(listener, nil, nil)
                if follower < 0 {
                    if errno == EINTR { continue }
                    return
                }
                var quiet: Int32 = 1
                #if canImport(Darwin)
                    setsockopt(follower, SOL_SOCKET, SO_NOSIGPIPE, &quiet, socklen_t(MemoryLayout<Int32>.size))
                #endif
                _ = quiet
                let hello = Array(#"{"event":"following"}"#.utf8) + [UInt8(ascii: "\n")]
                _ = hello.withUnsafeBytes { buffer in
                    #if canImport(Glibc)
                        Glibc.send(follower, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
                    #else
                        Darwin.send(follower, buffer.baseAddress, buffer.count, 0)
                    #endif
                }
                let kept = state.withLock { state in
                    guard state.listener >= 0 else { return false }
                    state.followers.append(follower)
                    return true
                }
                if !kept { closeSocket(follower) }
            }
        }
    }

    /// The socket of the store in `folder`.
    static func socketPath(of folder: URL) -> String { folder.appendingPathComponent("events.sock").path }

    /// Whether any follower listens, so that a run builds lines for them only then.
    var hasFollowers: Bool { state.withLock { !$0.followers.isEmpty } }

    /// Sends a line to every follower, dropping those that are gone.
    func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        state.withLock { state in
            state.followers.removeAll { follower in
                let sent = bytes.withUnsafeBytes { buffer in
                    #if canImport(Glibc)
                        Glibc.send(
                            follower, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                    #else
                        Darwin.send(follower, buffer.baseAddress, buffer.count, MSG_DONTWAIT)
                    #endif
                }
                guard sent != bytes.count else { return false }
                closeSocket(follower)
                return true
            }
        }
    }

    /// Stops serving: the followers see the end of their stream, and the socket file goes.
    func stop() {
        let (listener, followers) = state.withLock { state in
            defer {
                state.listener = -1
                state.followers = []
            }
            return (state.listener, state.followers)
        }
        guard listener >= 0 else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        accepting.wait()
        closeSocket(listener)
        for follower in followers { closeSocket(follower) }
        unlink(path)
    }

    private static func listen(at path: String) -> Int32? {
        guard var address = unixAddress(path) else { return nil }
        #if canImport(Glibc)
            let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let listener = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard listener >= 0 else { return nil }
        // A socket file left by a run that was killed is stale: nothing listens on it.
        unlink(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #if canImport(Glibc)
            let listening = bound == 0 && Glibc.listen(listener, 16) == 0
        #else
            let listening = bound == 0 && Darwin.listen(listener, 16) == 0
        #endif
        guard listening else {
            closeSocket(listener)
            return nil
        }
        return listener
    }

    /// The address of a Unix socket at `path`, or `nil` when the path is too long for one.
    static func unixAddress(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        return address
    }
}

/// Closes a socket's descriptor.
func closeSocket(_ descriptor: Int32) {
    #if canImport(Glibc)
        _ = Glibc.close(descriptor)
    #else
        _ = Darwin.close(descriptor)
    #endif
}
