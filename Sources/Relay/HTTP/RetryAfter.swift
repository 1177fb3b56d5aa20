import Foundation

/// Reads a `Retry-After` value, in either of its forms (RFC 9110 §10.2.3).
enum RetryAfter {
    /// The delay a `Retry-After` value asks for, measured from `now`; `nil` when the value is neither form.
    ///
    /// - Parameters:
    ///   - value: Delta-seconds (`120`) or an HTTP date (`Wed, 21 Oct 2026 07:28:00 GMT`).
    ///   - now: The current date on the DataPoint's clock; a date in the past means no delay.
    /// - Returns: The delay, or `nil`.
    static func delay(_ value: String, now: Date) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = UInt64(trimmed) { return .seconds(min(seconds, UInt64(Int64.max / 1_000_000_000))) }
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) {
                return .relaySeconds(max(0, date.timeIntervalSince(now)))
            }
        }
        return nil
    }

    /// IMF-fixdate, then the obsolete RFC 850 and asctime forms that recipients must still accept.
    private static let formats = [
        "EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy",
    ]
}
