import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real child process that a test starts, reads lines from, and kills with `SIGKILL`: what a crash test needs to
/// check that what a process acknowledged survives its death.
///
/// ```swift
/// let worker = try ChildProcess(product: "RelayCrashWorker", arguments: arguments)
/// let lines = await worker.readLines { $0.count >= commitsBeforeKill }
/// await worker.kill()
/// ```
public final class ChildProcess: Sendable {
    private let process: Process
    private let output: FileHandle
    private let input: FileHandle

    /// Starts an executable that the package builds beside the test binary, with pipes for its input and output.
    ///
    /// - Parameters:
    ///   - product: The executable product's name, such as a worker target of the test's package.
    ///   - arguments: Its arguments.
    /// - Throws: `CocoaError(.fileNoSuchFile)` when no such executable was built; what `Process.run()` throws.
    public convenience init(product: String, arguments: [String] = []) throws {
        try self.init(executable: try Self.builtProduct(product), arguments: arguments)
    }

    /// Starts an executable, with pipes for its input and output.
    ///
    /// - Parameters:
    ///   - executable: The executable's file.
    ///   - arguments: Its arguments.
    /// - Throws: What `Process.run()` throws.
    public init(executable: URL, arguments: [String] = []) throws {
        process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let stdout = Pipe()
        let stdin = Pipe()
        process.standardOutput = stdout
        process.standardInput = stdin
        output = stdout.fileHandleForReading
        input = stdin.fileHandleForWriting
        try process.run()
    }

    /// An executable that the package builds beside the test binary, found in the test binary's folder or one of the
    /// four above it.
    ///
    /// - Parameter name: The executable product's name.
    /// - Returns: Its file.
    /// - Throws: `CocoaError(.fileNoSuchFile)` when no such executable was built.
    public static func builtProduct(_ name: String) throws -> URL {
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<5 {
            let candidate = folder.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            folder.deleteLastPathComponent()
        }
        throw CocoaError(.fileNoSuchFile)
    }

    /// Reads the process's output lines until `enough` says so or the output ends; the blocking reads run off the
    /// cooperative thread pool.
    ///
    /// - Parameter enough: Whether the lines read so far are enough.
    /// - Returns: Every line read, without its newline.
    public func readLines(until enough: @escaping @Sendable ([String]) -> Bool) async -> [String] {
        let output = self.output
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var lines: [String] = []
                var buffer = Data()
                while !enough(lines) {
                    let chunk = output.availableData
                    if chunk.isEmpty { break }
                    buffer.append(chunk)
                    while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        lines.append(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                        buffer.removeSubrange(buffer.startIndex...newline)
                    }
                }
                continuation.resume(returning: lines)
            }
        }
    }

    /// Kills the process with `SIGKILL`, which it cannot catch, and waits until it is gone.
    public func kill() async {
        _ = systemKill(process.processIdentifier, SIGKILL)
        _ = await exitStatus()
    }

    /// Closes the process's input, which tells a process that reads it to stop, and waits until it exits.
    ///
    /// - Returns: Its exit status.
    @discardableResult
    public func closeInput() async -> Int32 {
        try? input.close()
        return await exitStatus()
    }

    /// For the child's side: exits this process once its input closes, that is once the test that started it
    /// closed it, or died.
    ///
    /// A worker that never reads its input would otherwise outlive a test that failed before killing it, or was
    /// killed itself, and run on beside every later test and benchmark. Call it first thing in a worker that does not
    /// read its input itself; the blocking read runs on a thread of its own. The process ends at once, with status 0
    /// (`_exit`): exit handlers and destructors would run beside the worker's threads, which are still at work.
    public static func exitWhenInputCloses() {
        Thread.detachNewThread {
            while !FileHandle.standardInput.availableData.isEmpty {}
            _exit(0)
        }
    }

    /// Waits, off the cooperative thread pool, until the process exits.
    ///
    /// - Returns: Its exit status.
    public func exitStatus() async -> Int32 {
        let process = self.process
        return await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            DispatchQueue.global().async {
                process.waitUntilExit()
                continuation.resume(returning: process.terminationStatus)
            }
        }
    }
}

#if canImport(Glibc)
    private func systemKill(_ pid: Int32, _ signal: Int32) -> Int32 { Glibc.kill(pid, signal) }
#elseif canImport(Darwin)
    private func systemKill(_ pid: Int32, _ signal: Int32) -> Int32 { Darwin.kill(pid, signal) }
#endif
