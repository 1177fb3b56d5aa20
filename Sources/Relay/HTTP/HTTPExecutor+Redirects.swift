import Foundation

/// Which redirects a call follows, and what of the request goes with it.
extension HTTPExecutor {
    /// The next request when the response is a redirect the call follows, or `nil`.
    func redirect(
        from request: CallRequest,
        _ response: HTTPTransportResponse,
        call: HTTPCall,
        after redirects: Int
    ) -> CallRequest? {
        guard [301, 302, 303, 307, 308].contains(response.status), redirects < call.maximumRedirects,
            let location = response.headers.headerValue("Location"),
            let target = URL(string: location, relativeTo: request.url)?.absoluteURL,
            ["http", "https"].contains(target.scheme?.lowercased() ?? "")
        else { return nil }
        var next = target.origin == call.url.origin ? request : request.withoutSecrets
        next.url = target
        let becomesGet =
            response.status == 303
            ? request.method != .head : [301, 302].contains(response.status) && request.method == .post
        if becomesGet {
            next.method = .get
            next.body = .none
            next.setHeader("Content-Type", nil)
            next.setHeader("Content-Length", nil)
        }
        return next
    }
}
