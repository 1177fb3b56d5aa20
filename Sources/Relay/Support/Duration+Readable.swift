import Foundation

extension Duration {
    /// The duration in the unit that suits it, for descriptions: `850 ns`, `12.5 µs`, `3.4 ms`, `2.1 s`.
    var readable: String {
        let nanoseconds = Double(components.seconds) * 1e9 + Double(components.attoseconds) / 1e9
        let magnitude = abs(nanoseconds)
        switch magnitude {
        case ..<1e3: return "\(Int(nanoseconds.rounded())) ns"
        case ..<1e6: return Self.format(nanoseconds / 1e3, unit: "µs")
        case ..<1e9: return Self.format(nanoseconds / 1e6, unit: "ms")
        default: return Self.format(nanoseconds / 1e9, unit: "s")
        }
    }

    /// Three significant digits at most, without trailing zeros.
    private static func format(_ value: Double, unit: String) -> String {
        let digits = abs(value) >= 100 ? 0 : abs(value) >= 10 ? 1 : 2
        var text = String(format: "%.\(digits)f", value)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return "\(text) \(unit)"
    }
}

extension Int {
    /// A byte count for descriptions: `512 B`, `1.5 kB`, `3.2 MB`.
    var readableBytes: String {
        let value = Double(self)
        switch abs(value) {
        case ..<1e3: return "\(self) B"
        case ..<1e6: return String(format: "%.1f kB", value / 1e3)
        case ..<1e9: return String(format: "%.1f MB", value / 1e6)
        default: return String(format: "%.1f GB", value / 1e9)
        }
    }

    /// `1 attempt`, `3 attempts`: a count and its noun, singular or plural.
    func counted(_ noun: String) -> String {
        "\(self) \(noun)\(self == 1 ? "" : "s")"
    }
}

extension Date {
    /// The date in ISO 8601 with milliseconds, in UTC, for descriptions.
    var readable: String {
        formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
