/// Headers that the HTTP requests of an attempt carry, set around the attempt: a trace context, say, as W3C
/// `traceparent`.
///
/// An observer's ``CallObserver/attempt(_:number:_:)`` sets them for the attempt's task; ``HTTPExecutor`` adds each
/// to every request the attempt sends, redirects included, unless the call sets that header itself. They are never
/// stored.
///
/// ```swift
/// func attempt<Result: Sendable>(
///     _ operation: CallOperation, number: Int, _ body: () async -> Result
/// ) async -> Result {
///     let headers = ["traceparent": operation.carrier["traceparent"] ?? ""]
///     return await PropagatedHeaders.$current.withValue(headers) { await body() }
/// }
/// ```
public enum PropagatedHeaders {
    /// The headers of the current task's attempt; none by default.
    @TaskLocal public static var current: [String: String] = [:]
}
