import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The injected clock, type-erased to nanoseconds since the DataPoint opened, and mapped to wall dates.
///
/// Internal times are `Int64` nanoseconds on the clock; public values are `Date`s computed from the wall date taken
/// when the DataPoint opened, so that a manual clock drives every date a test observes.
struct ClockSource: Sendable {
    private let readNow: @Sendable () -> Int64
    private let sleeper: @Sendable (Int64) async throws -> Void
    /// The clock's sleepers in words, when it reports them (see ``SleeperReportingClock``).
    let sleepersDescription: (@Sendable () -> String)?
    /// The wall date of clock time zero.
    let origin: Date
    /// Whether it is the system's `ContinuousClock`, which two DataPoints or executors share.
    let isSystem: Bool

    init<C: Clock>(_ clock: C, origin: Date = Date()) where C.Duration == Duration {
        let start = clock.now
        self.origin = origin
        var readNow: @Sendable () -> Int64 = { start.duration(to: clock.now).relayNanoseconds }
        #if os(Linux) && canImport(Glibc)
            // Workers read the time on every operation, and converting a `Duration` costs a 128-bit division;
            // `ContinuousClock` counts `CLOCK_BOOTTIME` on Linux, so read that directly.
            if C.self == ContinuousClock.self {
                let base = Self.bootTime()
                readNow = { Self.bootTime() - base }
            }
        #endif
        self.readNow = readNow
        if let reporting = clock as? any SleeperReportingClock {
            sleepersDescription = { reporting.sleepersDescription }
        } else {
            sleepersDescription = nil
        }
        sleeper = { deadline in
            try await clock.sleep(until: start.advanced(by: .nanoseconds(deadline)), tolerance: nil)
        }
        isSystem = C.self == ContinuousClock.self
    }

    /// Whether the clock reports its sleepers, so that workers tell the pipeline when an executor sleeps on it.
    var reportsSleepers: Bool { sleepersDescription != nil }

    /// Nanoseconds since the DataPoint opened.
    var now: Int64 { readNow() }

    #if os(Linux) && canImport(Glibc)
        private static func bootTime() -> Int64 {
            var time = timespec()
            clock_gettime(CLOCK_BOOTTIME, &time)
            return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
        }
    #endif

    /// Sleeps until the given clock time.
    func sleep(until deadline: Int64) async throws {
        try await sleeper(deadline)
    }

    /// Sleeps until the given clock time as a deadline that races other work, which an attempt's sleep observer
    /// must not take for a sleep the attempt waits on (see ``ClockSleepObserver``).
    ///
    /// On the system clock it sleeps on ``DeadlineTimer``, which a cancel leaves at once: a deadline mostly loses its
    /// race, and `Task.sleep` would hold each lost one in memory until its time.
    func sleepAsDeadline(until deadline: Int64) async throws {
        if isSystem { return try await DeadlineTimer.shared.sleep(nanoseconds: deadline &- now) }
        guard reportsSleepers, ClockSleepObserver.current != nil else { return try await sleeper(deadline) }
        try await ClockSleepObserver.$current.withValue(nil) { try await sleeper(deadline) }
    }

    func date(_ time: Int64) -> Date {
        origin.addingTimeInterval(Double(time) / 1e9)
    }

    /// The clock time of a wall date, saturating far in the past or future.
    func time(of date: Date) -> Int64 {
        let nanoseconds = date.timeIntervalSince(origin) * 1e9
        // Not a time at all: never, rather than a trap.
        if nanoseconds.isNaN { return Int64.max / 2 }
        if nanoseconds >= Double(Int64.max / 2) { return Int64.max / 2 }
        if nanoseconds <= Double(Int64.min / 2) { return Int64.min / 2 }
        return Int64(nanoseconds)
    }
}
