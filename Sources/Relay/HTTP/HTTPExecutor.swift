import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs ``CallKind/http`` operations: sends the ``HTTPCall`` in the payload and judges the response.
///
/// Every DataPoint registers one for ``CallKind/http`` on its own clock. Give another when the DataPoint opens to
/// change the transport or add a ``RequestAuthorizer``. A call enqueued while an executor with an authorizer is
/// registered never goes out without one: reopened, it waits (its status says so) until such an executor is
/// registered again.
///
/// ```swift
/// let point = try await DataPoint(
///     storage: .file(at: folder), clock: clock,
///     executors: [.http: HTTPExecutor(authorizer: BearerToken(tokens: tokens), clock: clock)])
/// ```
///
/// Per attempt it adds `Idempotency-Key` to unsafe methods and the ``PropagatedHeaders`` of the attempt's task (a trace
/// context, say), lets the authorizer add credentials, enforces the call's
/// timeout on its clock (the DataPoint's, unless given another), and follows redirects, dropping secret headers on the
/// way to another origin. Then:
/// - an accepted status completes the operation with a ``CallResponse``;
/// - a retryable status (408, 429 and 5xx by default) retries, after the server's `Retry-After` when it sends one,
///   cut to the call's ``HTTPCall/maximumRetryAfter``;
/// - any other status fails the operation;
/// - a timeout or a connection lost mid-response retries;
/// - a host that cannot be reached takes its origin offline for the sequence without using up the attempt (see
///   ``CallOutcome/offline(reason:)``).
public struct HTTPExecutor: CallExecutor {
    private let transport: any HTTPTransport
    private let authorizer: (any RequestAuthorizer)?
    private let clock: ClockSource

    /// Creates an executor.
    ///
    /// - Parameters:
    ///   - transport: What sends requests; URLSession by default.
    ///   - authorizer: What adds credentials at send time.
    ///   - clock: The clock of the measurements and of every request's timeout; pass the DataPoint's, as the
    ///     executor each DataPoint registers on its own does.
    public init(
        transport: any HTTPTransport = URLSessionTransport.shared,
        authorizer: (any RequestAuthorizer)? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) {
        self.transport = transport
        self.authorizer = authorizer
        self.clock = ClockSource(clock)
    }

    /// Whether it has a ``RequestAuthorizer``: the calls enqueued while it is registered then never go out without
    /// one, even after a restart whose code registers the authorizer late.
    var authorizes: Bool { authorizer != nil }

    /// Runs one attempt of an HTTP operation.
    ///
    /// - Parameters:
    ///   - operation: An operation made by
    ///     ``CallOperation/http(_:id:sequenceName:dependencies:priority:retryPolicy:idempotencyKey:persistentUserInfo:)``.
    ///   - context: The attempt's context.
    /// - Returns: The attempt's outcome.
    /// - Throws: `CancellationError` when the operation is cancelled; an authorizer's error.
    public func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
        let call: HTTPCall
        do {
            call = try operation.decodedHTTPCall()
        } catch {
            return .failed(reason: error.message)
        }
        if let destination = call.destination, Self.isFolder(destination) {
            return .failed(reason: "the download's destination \(destination.path) is a folder; name a file in it")
        }
        var request = CallRequest(method: call.method, url: call.url, headers: call.headers, body: call.body)
        if call.method.isUnsafe && request.headers.headerValue("Idempotency-Key") == nil {
            request.setHeader("Idempotency-Key", context.idempotencyKey)
        }
        for (name, value) in PropagatedHeaders.current where request.headers.headerValue(name) == nil {
            request.setHeader(name, value)
        }
        try await authorizer?.authorize(&request, for: operation)
        var measured = Measurement(started: clock.now)
        // One deadline for the attempt, redirects included.
        let deadline = Self.deadline(after: call.timeout, from: measured.started)
        var redirects = 0
        while true {
            let outcome: CallOutcome
            switch try await send(request, for: call, until: deadline, measuring: &measured, context: context) {
            case .timedOut:
                outcome = .retry(reason: "\(request) timed out after \(call.timeout)")
            case .failed(let error) where error.isConnectivityFailure:
                outcome = .offline(reason: "\(request.url.origin): \(error.message)")
            case .failed(let error):
                outcome = .retry(reason: "\(request) failed: \(error.message)")
            case .responded(let response):
                if let next = redirect(from: request, response, call: call, after: redirects) {
                    request = next
                    redirects += 1
                    continue
                }
                let elapsed = measured.ended - measured.started
                let (judged, answer) = finish(request, response, call: call, context: context, elapsed: elapsed)
                let report = measured.report(response: answer, error: judged.failureReason)
                if judged.isCompletion {
                    // The response travels once: in the outcome.
                    context.report(.answeredInResult(status: response.status, report))
                } else {
                    context.report(report)
                }
                return judged
            }
            context.report(measured.report(response: nil, error: outcome.failureReason))
            return outcome
        }
    }

    /// Whether the origin of the operation's URL answers a `HEAD /` within ten seconds, with any status.
    ///
    /// - Parameter operation: The operation that found its host unreachable.
    /// - Returns: Whether the host answered.
    public func probe(_ operation: CallOperation) async -> Bool {
        guard let call = try? operation.decodedHTTPCall(),
            let root = URL(string: "/", relativeTo: call.url)?.absoluteURL
        else { return true }
        let probe = HTTPCall(method: .head, url: root, timeout: .seconds(10))
        var measured = Measurement(started: clock.now)
        let request = CallRequest(method: .head, url: root)
        let deadline = Self.deadline(after: probe.timeout, from: measured.started)
        guard case .responded = try? await send(request, for: probe, until: deadline, measuring: &measured)
        else {
            return false
        }
        return true
    }

    private enum Exchange {
        case responded(HTTPTransportResponse)
        case failed(HTTPTransportError)
        case timedOut
    }

    /// An attempt's measurements, over the redirects it follows, in nanoseconds of the clock.
    private struct Measurement {
        let started: Int64
        var headersArrived: Int64?
        var ended: Int64 = 0
        var bytesSent = 0
        var bytesReceived = 0

        init(started: Int64) {
            self.started = started
            ended = started
        }

        func report(response: CallResponse?, error: String?) -> AttemptReport {
            AttemptReport(
                response: response,
                error: error,
                timeToResponseHeaders: headersArrived.map { .nanoseconds($0 - started) },
                timeToEndOfBody: response == nil ? nil : .nanoseconds(ended - started),
                bytesSent: bytesSent,
                bytesReceived: bytesReceived
            )
        }
    }

    /// When the response headers of the request in flight arrived; written from the transport's callback.
    private final class HeadersArrival: Sendable {
        let moment = Mutex<Int64?>(nil)
    }

    private static func isFolder(_ url: URL) -> Bool {
        var isFolder: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) && isFolder.boolValue
    }

    /// The clock time `timeout` after `start`, or the end of time.
    private static func deadline(after timeout: Duration, from start: Int64) -> Int64 {
        let (deadline, overflow) = start.addingReportingOverflow(timeout.relayNanoseconds)
        return overflow ? .max : deadline
    }

    /// Sends one request, to be answered by `deadline`, measured on the clock.
    ///
    /// The deadline lives with the attempt. When the executor and the DataPoint both tell time by the system clock,
    /// the DataPoint's attempt timer keeps it (``CallContext/withTimeout(_:_:)``), which costs no task and no timer of
    /// its own; otherwise the request races a sleep on the executor's clock.
    private func send(
        _ request: CallRequest,
        for call: HTTPCall,
        until deadline: Int64,
        measuring measured: inout Measurement,
        context: CallContext? = nil
    ) async throws -> Exchange {
        let transport = self.transport
        let clock = self.clock
        let partial = call.destination.map(Self.partialFile(for:))
        let arrival = HeadersArrival()
        defer {
            measured.ended = clock.now
            measured.headersArrived = arrival.moment.withLock { $0 }
        }
        let exchange: @Sendable () async throws -> HTTPTransportResponse = {
            try await transport.send(request, writingBodyTo: partial) {
                let now = clock.now
                arrival.moment.withLock { $0 = now }
            }
        }
        let remaining = Duration.nanoseconds(deadline &- clock.now)
        guard remaining > .zero else { return .timedOut }
        do {
            let timed: HTTPTransportResponse?
            if let context, clock.isSystem, context.tellsSystemTime {
                timed = try await context.withTimeout(remaining) { try await exchange() }
            } else {
                timed = try await Self.race(exchange, against: deadline, on: clock)
            }
            guard let response = timed else {
                partial.map(Self.remove)
                return .timedOut
            }
            measured.bytesSent += response.bytesSent
            measured.bytesReceived += response.bytesReceived
            return .responded(response)
        } catch let error as HTTPTransportError {
            partial.map(Self.remove)
            return .failed(error)
        } catch {
            partial.map(Self.remove)
            throw error
        }
    }

    /// The exchange's response, or `nil` when the clock reaches the deadline first.
    private static func race(
        _ exchange: @escaping @Sendable () async throws -> HTTPTransportResponse,
        against deadline: Int64,
        on clock: ClockSource
    ) async throws -> HTTPTransportResponse? {
        try await withThrowingTaskGroup(of: HTTPTransportResponse?.self) { group in
            group.addTask { try await exchange() }
            group.addTask {
                try await clock.sleepAsDeadline(until: deadline)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }
}

extension CallOutcome {
    /// Whether it completes the operation with a result.
    var isCompletion: Bool {
        if case .completed = self { true } else { false }
    }

    /// Why the attempt did not complete, if it did not.
    var failureReason: String? {
        switch self {
        case .completed, .skipped: nil
        case .retry(_, let reason), .failed(let reason), .offline(let reason): reason
        }
    }
}
