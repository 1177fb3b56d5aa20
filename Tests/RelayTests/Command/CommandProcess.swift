import Dispatch
import Foundation
import RelayTesting
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real child process, by default the built `relay` command: its output is collected line by line as it comes, so a
/// test can wait for a line, signal or kill it, and read its exit status.
final class CommandProcess: Sendable {
    private let process: Process
    private struct Output {
        var out: [String] = []
        var err: [String] = []
        var waiters: [(text: String, errors: Bool, continuation: CheckedContinuation<Void, Never>)] = []
        var ended = false
        var errorsEnded = false
    }

    private let output = Mutex(Output())
    private let readers = DispatchGroup()

    convenience init(_ arguments: [String], in folder: URL, environment: [String: String] = [:]) throws {
        let relay = try ChildProcess.builtProduct("relay")
        try self.init(executable: relay, arguments, in: folder, environment: environment)
    }

    init(executable: URL, _ arguments: [String], in folder: URL, environment: [String: String] = [:]) throws {
        process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = folder
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        collect(out.fileHandleForReading, errors: false)
        collect(err.fileHandleForReading, errors: true)
    }

    /// Runs `relay` with `arguments` to its end.
    static func run(
        _ arguments: [String], in folder: URL, environment: [String: String] = [:]
    ) async throws -> (status: Int32, out: [String], err: String) {
        let process = try CommandProcess(arguments, in: folder, environment: environment)
        let status = await process.exit()
        return (status, process.out, process.err.joined(separator: "\n"))
    }

    private func collect(_ handle: FileHandle, errors: Bool) {
        readers.enter()
        Thread.detachNewThread { [self] in
            defer { readers.leave() }
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    append(line, errors: errors)
                }
            }
            if !buffer.isEmpty { append(String(decoding: buffer, as: UTF8.self), errors: errors) }
            let waiters = output.withLock { output in
                if errors { output.errorsEnded = true } else { output.ended = true }
                let ending = output.waiters.filter { $0.errors == errors }
                output.waiters.removeAll { $0.errors == errors }
                return ending.map(\.continuation)
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    private func append(_ line: String, errors: Bool) {
        let satisfied = output.withLock { output in
            if errors { output.err.append(line) } else { output.out.append(line) }
            let satisfied = output.waiters.filter { $0.errors == errors && line.contains($0.text) }
            output.waiters.removeAll { $0.errors == errors && line.contains($0.text) }
            return satisfied.map(\.continuation)
        }
        for waiter in satisfied { waiter.resume() }
    }

    /// Returns once standard output has a line that contains `text`, or has ended.
    func waitForOutput(containing text: String) async {
        await wait(for: text, errors: false)
    }

    /// Returns once standard error has a line that contains `text`, or has ended.
    func waitForError(containing text: String) async {
        await wait(for: text, errors: true)
    }

    private func wait(for text: String, errors: Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = output.withLock { output in
                let lines = errors ? output.err : output.out
                guard !(errors ? output.errorsEnded : output.ended), !lines.contains(where: { $0.contains(text) })
                else { return true }
                output.waiters.append((text, errors, continuation))
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    var out: [String] { output.withLock { $0.out } }
    var err: [String] { output.withLock { $0.err } }
    var pid: Int32 { process.processIdentifier }

    /// Waits until the process exits and its output has been read whole; returns its exit status.
    func exit() async -> Int32 {
        let status = await exitStatus(of: process)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            readers.notify(queue: .global()) { continuation.resume() }
        }
        return status
    }

    /// Sends a signal: SIGINT as Ctrl-C does, or SIGKILL as a crash.
    func send(_ signal: Int32) {
        _ = kill(process.processIdentifier, signal)
    }
}

/// Waits, off the cooperative pool, until a child process exits, and returns its exit status.
private func exitStatus(of process: Process) async -> Int32 {
    await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
        DispatchQueue.global().async {
            process.waitUntilExit()
            continuation.resume(returning: process.terminationStatus)
        }
    }
}
