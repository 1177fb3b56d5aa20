import Relay
import Synchronization
import Tracing

/// Traces Relay's operations with swift-distributed-tracing: one span per attempt, in the trace of the task that
/// enqueued the operation, whose context goes out on the attempt's HTTP requests (W3C `traceparent`, or what the
/// tracer injects).
///
/// As an operation is enqueued, the enqueuing task's context is injected into the operation's
/// ``Relay/CallOperation/carrier``, so that it survives a restart; each attempt extracts it, runs in a span of kind
/// `consumer` whose parent it is, named `relay.attempt <kind>`, with the attributes `relay.operation.id`,
/// `relay.operation.kind`, `relay.sequence` and `relay.attempt`, and ends it with an error status when the attempt
/// failed, threw or asked for a retry.
///
/// ```swift
/// var configuration = DataPoint.Configuration()
/// configuration.observers = [RelayTracing()]
/// ```
public struct RelayTracing: CallObserver {
    private let tracer: any Tracer

    /// Creates the observer.
    ///
    /// - Parameter tracer: The tracer; the bootstrapped one by default.
    public init(tracer: any Tracer = InstrumentationSystem.tracer) {
        self.tracer = tracer
    }

    /// The enqueuing task's context, injected.
    public func carrier(for operation: CallOperation) -> [String: String] {
        guard let context = ServiceContext.current else { return [:] }
        var carrier: [String: String] = [:]
        tracer.inject(context, into: &carrier, using: DictionaryPropagation())
        return carrier
    }

    /// Runs the attempt in a span of its own, child of the enqueuer's, with the span's context propagated.
    public func attempt<Result: Sendable>(
        _ operation: CallOperation, number: Int, _ body: () async -> Result
    ) async -> Result {
        var enqueuer = ServiceContext.topLevel
        tracer.extract(operation.carrier, into: &enqueuer, using: DictionaryPropagation())
        let span = tracer.startSpan("relay.attempt \(operation.kind)", context: enqueuer, ofKind: .consumer)
        // A span that is not recorded, as a no-op tracer's or one sampled out, is still propagated; but nothing is
        // written on it, since the operation's id as text alone costs more than the rest of the observation.
        let recording = span.isRecording
        if recording {
            span.attributes["relay.operation.id"] = operation.id.uuidString.lowercased()
            span.attributes["relay.operation.kind"] = operation.kind.rawValue
            span.attributes["relay.sequence"] = operation.sequenceName.rawValue
            span.attributes["relay.attempt"] = number
        }
        var headers: [String: String] = [:]
        tracer.inject(span.context, into: &headers, using: DictionaryPropagation())
        let ending = recording ? AttemptEndingBox() : nil
        let result = await ServiceContext.withValue(span.context) {
            guard let ending else { return await Self.propagating(headers, body) }
            return await AttemptEndingBox.$current.withValue(ending) { await Self.propagating(headers, body) }
        }
        if let ended = ending?.ending {
            if let status = ended.httpStatus { span.attributes["http.response.status_code"] = status }
            if let failure = Self.failure(of: ended) { span.setStatus(SpanStatus(code: .error, message: failure)) }
        }
        span.end()
        return result
    }

    /// Runs `body` with the span's context on its outbound requests, if the tracer put any.
    private static func propagating<Result>(
        _ headers: [String: String], _ body: () async -> Result
    ) async -> Result {
        if headers.isEmpty { return await body() }
        return await PropagatedHeaders.$current.withValue(headers) { await body() }
    }

    /// Notes how the attempt ended, for its span.
    public func attemptEnded(_ operation: CallOperation, number: Int, ending: AttemptEnding) {
        AttemptEndingBox.current?.ending = ending
    }

    private static func failure(of ending: AttemptEnding) -> String? {
        switch ending.outcome {
        case .completed?, .skipped?: nil
        case .retry(_, let reason)?, .failed(let reason)?, .offline(let reason)?: reason
        case nil: ending.error ?? "the executor threw"
        }
    }
}

/// How the attempt that the current task runs ended, noted inside it and read once it returns.
private final class AttemptEndingBox: Sendable {
    @TaskLocal static var current: AttemptEndingBox?

    private let noted = Mutex<AttemptEnding?>(nil)

    var ending: AttemptEnding? {
        get { noted.withLock { $0 } }
        set { noted.withLock { $0 = newValue } }
    }
}

/// Injects into, and extracts from, a dictionary of strings.
struct DictionaryPropagation: Injector, Extractor {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key] = value
    }

    func extract(key: String, from carrier: [String: String]) -> String? {
        carrier[key]
    }
}
