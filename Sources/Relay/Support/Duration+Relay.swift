extension Duration {
    /// The duration in seconds as a floating-point number.
    var relaySeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in whole nanoseconds, saturating at the bounds of `Int64`.
    var relayNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }

    /// A duration from seconds, saturating far in the future rather than trapping.
    static func relaySeconds(_ seconds: Double) -> Duration {
        guard seconds.isFinite else { return .seconds(Int64.max / 2) }
        let nanoseconds = seconds * 1e9
        if nanoseconds >= Double(Int64.max / 2) { return .nanoseconds(Int64.max / 2) }
        if nanoseconds <= Double(Int64.min / 2) { return .nanoseconds(Int64.min / 2) }
        return .nanoseconds(Int64(nanoseconds))
    }
}
