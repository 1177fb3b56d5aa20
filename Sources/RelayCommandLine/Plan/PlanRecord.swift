import Foundation
import Relay

/// What a store keeps of a plan it runs, committed with the plan's operations in one transaction: the operation of
/// each call, so that running the plan again resumes it instead of sending its calls anew.
struct PlanRecord: Model, Equatable {
    /// The collection plans are kept in.
    static let collection = "plans"
    /// The user-info key under which each operation keeps its call's name.
    static let callNameKey = "relay.call"

    struct Entry: Codable, Sendable, Equatable {
        var name: String
        var operation: UUID
        var sequence: String
    }

    /// The plan's name.
    var id: String
    /// The digest of the plan that started it (see ``Plan/digest``).
    var digest: String
    var startedAt: Date
    /// The calls in the plan's order, each with its current operation, which a replay replaces.
    var calls: [Entry]

    /// The operations of a plan, with fresh ids and dependencies by id, and the record that names them.
    static func operations(of plan: Plan, at date: Date) throws -> (PlanRecord, [CallOperation]) {
        let ids = Dictionary(uniqueKeysWithValues: plan.calls.map { ($0.name, UUID()) })
        var operations: [CallOperation] = []
        for call in plan.calls {
            let http = HTTPCall(
                method: HTTPCall.Method(rawValue: call.method), url: URL(string: call.url)!, headers: call.headers,
                body: call.bodyFile.map { .file(URL(fileURLWithPath: $0)) } ?? call.body.map { .data(Data($0.utf8)) }
                    ?? .none,
                timeout: call.timeout.map(Duration.seconds) ?? .seconds(60),
                destination: call.download.map { URL(fileURLWithPath: $0) })
            var userInfo = [callNameKey: call.name]
            for (header, template) in call.secretHeaders {
                userInfo[EnvironmentAuthorizer.userInfoPrefix + header] = template
            }
            operations.append(
                try CallOperation.http(
                    http, id: ids[call.name]!, sequenceName: call.sequence.map(CallSequence.Name.init(rawValue:)),
                    dependencies: Set(call.dependsOn.map { ids[$0]! }), priority: call.priority,
                    retryPolicy: call.retry.map {
                        RetryPolicy(
                            maximumAttempts: $0.attempts, initialDelay: .seconds($0.initialDelay),
                            maximumDelay: .seconds($0.maximumDelay))
                    } ?? .default,
                    persistentUserInfo: userInfo))
        }
        let entries = operations.map { operation in
            Entry(
                name: operation.persistentUserInfo[callNameKey]!, operation: operation.id,
                sequence: operation.sequenceName.rawValue)
        }
        return (PlanRecord(id: plan.name, digest: plan.digest, startedAt: date, calls: entries), operations)
    }
}
