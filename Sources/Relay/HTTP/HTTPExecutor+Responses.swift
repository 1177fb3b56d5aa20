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
        _ request: CallRequest,
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
            if let collection = call.responseCollection, let reason = keep(answer.body, in: collection, context) {
                return (.failed(reason: "\(request) answered \(response.status), but \(reason)"), answer)
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

    /// Stages the response body as a model of `collection`, to be upserted with the completion; returns why it cannot,
    /// if it cannot.
    private func keep(_ body: Data, in collection: String, _ context: CallContext) -> String? {
        do {
            try context.stage { transaction in
                guard transaction.holds(collection) else {
                    throw RelayError(
                        .unknownCollection, "no type is registered as the collection \(collection) to keep it in")
                }
                let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
                guard let id = object?["id"], id is String || id is NSNumber else {
                    throw RelayError(
                        .invalidArgument, "its body is not a JSON object with an id to keep it under in \(collection)")
                }
                try transaction.upsert(encoded: body, id: "\(id)", in: collection)
            }
        } catch {
            return (error as? RelayError)?.message ?? "\(error)"
        }
        return nil
    }

    /// Where a download is written until it is accepted: beside the destination, so the final move is a rename, under
    /// a name that says whose it is (`.NAME.relay-partial`), with mode 0600.
    static func partialFile(for destination: URL) -> URL {
        destination.deletingLastPathComponent()
            .appendingPathComponent(".\(destination.lastPathComponent).relay-partial")
    }

    /// Removes the partial files that attempts of these operations left when their process died: none of them runs
    /// while a store opens, and each starts its download again from the first byte.
    static func removePartialDownloads(of operations: [StoredOperation]) {
        for stored in operations where stored.result == nil && stored.operation.kind == .http {
            guard let destination = try? HTTPCall(payload: stored.operation.payload).destination else { continue }
            remove(partialFile(for: destination))
        }
    }

    static func remove(_ file: URL) {
        unlink(file.path)
    }
}
