import Foundation

/// Writes whole lines straight to standard output and standard error, unbuffered, so that a reader on a pipe sees
/// each line as it happens.
enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func raw(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Whether standard output is a terminal, where progress is drawn in place rather than printed as JSON lines.
    static var isTerminal: Bool { isatty(STDOUT_FILENO) != 0 }
}
