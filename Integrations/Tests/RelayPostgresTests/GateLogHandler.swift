import Logging
import RelayTesting

/// A log handler that opens a gate once a message containing some text is logged, so that a test waits for
/// something that only the log tells of.
struct GateLogHandler: LogHandler {
    let gate: Gate
    let text: String
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    init(opening gate: Gate, on text: String) {
        self.gate = gate
        self.text = text
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        if "\(event.message)".contains(text) { gate.open() }
    }
}
