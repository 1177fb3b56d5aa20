import Foundation
import Relay

/// A plan: named HTTP calls, the sequences they run on, and the order between them.
///
/// ```json
/// {
///   "name": "nightly-sync",
///   "sequences": [{ "name": "api", "bunchSize": 4 }],
///   "calls": [
///     { "name": "catalog", "url": "https://example.com/catalog", "sequence": "api" },
///     { "name": "order", "method": "POST", "url": "https://example.com/orders", "body": "{\"sku\": 7}",
///       "headers": { "Content-Type": "application/json" },
///       "secretHeaders": { "Authorization": "Bearer $SHOP_TOKEN" },
///       "dependsOn": ["catalog"], "retry": { "attempts": 5, "initialDelay": 0.5 } }
///   ]
/// }
/// ```
///
/// Secret headers name environment variables (`$NAME` or `${NAME}`); the store keeps the names, and their values are
/// read when each request is sent.
struct Plan: Codable, Sendable, Equatable {
    struct Sequence: Codable, Sendable, Equatable {
        var name: String
        var bunchSize: Int
        var algorithm: String
    }

    struct Retry: Codable, Sendable, Equatable {
        var attempts: Int
        var initialDelay: Double
        var maximumDelay: Double
    }

    struct Call: Codable, Sendable, Equatable {
        var name: String
        var method: String
        var url: String
        var headers: [String: String]
        var secretHeaders: [String: String]
        var body: String?
        var bodyFile: String?
        var download: String?
        var dependsOn: [String]
        var sequence: String?
        var priority: Int
        var retry: Retry?
        var timeout: Double?
    }

    var name: String
    var sequences: [Sequence]
    var calls: [Call]
    /// How long a run waits, in seconds, before it cancels the calls that have not finished and exits 1; `nil` for no
    /// limit of the plan's own (each call's retries still end after a day).
    var deadline: Double?

    /// Checks that the environment holds every variable that the secret headers of `calls` name.
    ///
    /// `calls` are the calls that will be sent: one that ended in an earlier run needs none.
    ///
    /// - Throws: ``PlanError`` naming the first header whose variable is not set.
    func checkSecrets(of calls: Set<String>, in environment: [String: String]) throws(PlanError) {
        for (index, call) in self.calls.enumerated() where calls.contains(call.name) {
            for (header, template) in call.secretHeaders.sorted(by: { $0.key < $1.key }) {
                for variable in EnvironmentAuthorizer.variables(in: template) where environment[variable] == nil {
                    throw PlanError(
                        field: "calls[\(index)].secretHeaders.\(header)",
                        message: "environment variable \(variable) is not set")
                }
            }
        }
    }

    /// A digest of the plan as parsed, so that a store can tell whether a plan changed between runs: FNV-1a over its
    /// canonical JSON form.
    var digest: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let bytes = (try? encoder.encode(self)) ?? Data()
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
