import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The crash worker, a real child process that tests read from and kill.
final class WorkerProcess: Sendable {
    private let process: Process
    private let output: FileHandle
    private let input: FileHandle

    /// Starts the worker built beside the test binary.
    init(_ arguments: [String]) throws {
        process = Process()
        process.executableURL = try builtProduct("RelayCrashWorker")
        process.arguments = arguments
        let stdout = Pipe()
        let stdin = Pipe()
        process.standardOutput = stdout
        process.standardInput = stdin
        output = stdout.fileHandleForReading
        input = stdin.fileHandleForWriting
        try process.run()
    }

    /// Reads output lines until `enough` says so or the output ends; the blocking reads run off the cooperative pool.
    func readLines(until enough: @escaping @Sendable ([String]) -> Bool) async -> [String] {
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

    /// Kills the worker with SIGKILL and waits until it is gone.
    func kill() async {
        sendKill(process.processIdentifier)
        await waitForExit()
    }

    /// Closes the worker's input, which asks a holding worker to stop, and waits until it exits.
    func closeInput() async {
        try? input.close()
        await waitForExit()
    }

    private func waitForExit() async {
        _ = await exitStatus(of: process)
    }
}

/// An executable that the package builds beside the test binary, such as the crash worker or `relay`.
func builtProduct(_ name: String) throws -> URL {
    var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<5 {
        let candidate = folder.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        folder.deleteLastPathComponent()
    }
    throw CocoaError(.fileNoSuchFile)
}

/// Waits, off the cooperative pool, until a child process exits, and returns its exit status.
func exitStatus(of process: Process) async -> Int32 {
    await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
        DispatchQueue.global().async {
            process.waitUntilExit()
            continuation.resume(returning: process.terminationStatus)
        }
    }
}

private func sendKill(_ pid: Int32) {
    _ = kill(pid, SIGKILL)
}
