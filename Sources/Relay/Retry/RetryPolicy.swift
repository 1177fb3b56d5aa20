import Foundation

/// How an operation is retried after an attempt asks for a retry or throws.
///
/// Delays grow exponentially from ``initialDelay`` by ``multiplier``, are capped at ``maximumDelay``, and with
/// ``Jitter-swift.enum/full`` jitter are drawn uniformly between zero and that bound, so that many clients do not retry
/// in lockstep. The policy gives up, and the operation becomes `failed`, after ``maximumAttempts`` attempts or once the
/// next attempt would start later than ``maximumElapsed`` after the first one. Time that an operation waits for an
/// offline destination counts toward ``maximumElapsed``, which is one day by default, so that no operation waits for
/// an unreachable host for ever unless its policy says so.
///
/// ```swift
/// let patient = RetryPolicy(maximumAttempts: 8, initialDelay: .milliseconds(200), maximumDelay: .seconds(30))
/// ```
///
/// - Important: All waiting runs on the DataPoint's injected clock, so tests drive retries with a manual clock.
public struct RetryPolicy: Sendable, Hashable, Codable {
    /// How a computed delay is randomized.
    ///
    /// A closed enum: these cases are the whole set, and a `switch` over them needs no `default`.
    public enum Jitter: String, Sendable, Hashable, Codable {
        /// The delay is exactly the exponential bound.
        case none
        /// The delay is uniform between zero and the exponential bound ("full jitter").
        case full
    }

    /// The total number of attempts, the first included; at least 1.
    public var maximumAttempts: Int
    /// The bound on the delay before the second attempt.
    public var initialDelay: Duration
    /// The growth factor of the bound from one attempt to the next; at least 1.
    public var multiplier: Double
    /// The cap on any computed delay.
    public var maximumDelay: Duration
    /// The longest time from the first attempt's start to a retry's start; `nil` for no limit.
    public var maximumElapsed: Duration?
    /// How the delay is randomized.
    public var jitter: Jitter

    /// Creates a policy.
    ///
    /// - Parameters:
    ///   - maximumAttempts: The total number of attempts, the first included.
    ///   - initialDelay: The bound on the delay before the second attempt.
    ///   - multiplier: The growth factor of the bound per attempt.
    ///   - maximumDelay: The cap on any delay.
    ///   - maximumElapsed: The longest time from the first attempt to a retry, offline time included; one day by
    ///     default, `nil` for no limit.
    ///   - jitter: How the delay is randomized.
    public init(
        maximumAttempts: Int = 5,
        initialDelay: Duration = .seconds(1),
        multiplier: Double = 2,
        maximumDelay: Duration = .seconds(60),
        maximumElapsed: Duration? = .seconds(86_400),
        jitter: Jitter = .full
    ) {
        self.maximumAttempts = maximumAttempts
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
        self.maximumElapsed = maximumElapsed
        self.jitter = jitter
    }

    /// Five attempts, from one second up to a minute apart, with full jitter.
    public static let `default` = RetryPolicy()

    /// A single attempt: any retry request or thrown error fails the operation.
    public static let never = RetryPolicy(maximumAttempts: 1)

    /// The upper bound of the delay after the given attempt, before jitter.
    ///
    /// - Parameter attempt: The attempt that just ended, starting at 1.
    /// - Returns: `initialDelay × multiplier^(attempt − 1)`, capped at ``maximumDelay``.
    public func delayBound(afterAttempt attempt: Int) -> Duration {
        let cap = maximumDelay.relaySeconds
        let exponent = Double(max(0, attempt - 1))
        let bound = initialDelay.relaySeconds * pow(multiplier, exponent)
        guard bound.isFinite, bound < cap else { return maximumDelay }
        return .relaySeconds(bound)
    }

    /// The delay before the next attempt, with jitter applied.
    ///
    /// - Parameters:
    ///   - attempt: The attempt that just ended, starting at 1.
    ///   - generator: The source of randomness for jitter.
    /// - Returns: A delay between zero and ``delayBound(afterAttempt:)``.
    public func delay(afterAttempt attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let bound = delayBound(afterAttempt: attempt)
        switch jitter {
        case .none:
            return bound
        case .full:
            let nanoseconds = bound.relayNanoseconds
            guard nanoseconds > 0 else { return .zero }
            return .nanoseconds(Int64.random(in: 0...nanoseconds, using: &generator))
        }
    }

    /// Decides whether to retry after a failed attempt and when.
    ///
    /// - Parameters:
    ///   - attempt: The attempt that just ended, starting at 1.
    ///   - elapsed: Time since the first attempt started.
    ///   - requestedDelay: A delay the executor asked for, which replaces the computed one.
    ///   - generator: The source of randomness for jitter.
    /// - Returns: The delay before the next attempt, or `nil` when the policy gives up.
    public func nextDelay(
        afterAttempt attempt: Int,
        elapsed: Duration,
        requestedDelay: Duration?,
        using generator: inout some RandomNumberGenerator
    ) -> Duration? {
        guard attempt < maximumAttempts else { return nil }
        let delay = requestedDelay.map { max($0, .zero) } ?? self.delay(afterAttempt: attempt, using: &generator)
        if let maximumElapsed, elapsed + delay > maximumElapsed { return nil }
        return delay
    }

    /// Why the policy cannot be applied, or `nil` when it is valid.
    var validationFailure: String? {
        if maximumAttempts < 1 { return "maximumAttempts is \(maximumAttempts); it must be at least 1" }
        if initialDelay < .zero { return "initialDelay is negative" }
        if maximumDelay < .zero { return "maximumDelay is negative" }
        if !(multiplier >= 1) || !multiplier.isFinite {
            return "multiplier is \(multiplier); it must be finite and ≥ 1"
        }
        if let maximumElapsed, maximumElapsed < .zero { return "maximumElapsed is negative" }
        return nil
    }
}
