import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How a final response is judged: accepted, retried (honouring `Retry-After`) or failed, and where a download goes.
extension HTTPExecutor {
    /// The outcome of a final response, and the response as the caller sees it.
    func finish(
        _ request: HTTPRequest,
        _ response: HTTPTransportResponse,
        call: HTTPCall,
        context: CallContext,
        elapsed: Int64
    ) -> (CallOutcome, CallResponse) {
        let partial = call.destination.map(Self.partialFile(for:))
        var answer = CallResponse(
            status: response.status,
            headers: response.headers,
            body: response.body,
            url: request.url
        )
        if call.acceptedStatusCodes.contains(response.status) {
            if let destination = call.destination, let partial {
                guard rename(partial.path, destination.path) == 0 else {
                    Self.remove(partial)
                    return (.retry(reason: "cannot move the download into \(destination.lastPathComponent)"), answer)
                }
                answer.file = destination
            }
            return (.completed(answer.encoded), answer)
        }
        partial.map(Self.remove)
        let reason = "\(request) answered \(response.status)"
        guard call.retryableStatusCodes.contains(response.status) else { return (.failed(reason: reason), answer) }
        let now = context.startedAt.addingTimeInterval(Duration.nanoseconds(elapsed).relaySeconds)
        let asked = response.headers.headerValue("Retry-After").flatMap { RetryAfter.delay($0, now: now) }
        return (.retry(after: asked.map { min($0, call.maximumRetryAfter) }, reason: reason), answer)
    }

    /// Where a download is written until it is accepted: beside the destination, so the final move is a rename.
    static func partialFile(for destination: URL) -> URL {
        destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).partial")
    }

    static func remove(_ file: URL) {
        unlink(file.path)
    }
}
