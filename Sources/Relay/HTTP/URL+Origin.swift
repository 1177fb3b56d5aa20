import Foundation

extension URL {
    /// Scheme, host and port: what decides whether credentials may follow a redirect.
    var origin: String {
        let scheme = self.scheme?.lowercased() ?? ""
        let port = self.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(host?.lowercased() ?? ""):\(port)"
    }
}
