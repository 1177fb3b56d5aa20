import Foundation

/// Executors: registered by kind, and the operations that wait for theirs.
extension PipelineStateMachine {

    /// The kind whose executor runs `operation`: its own, or for an HTTP call enqueued where an authorizer would
    /// authorize it, one that has an authorizer (S18).
    static func executorKind(of operation: CallOperation) -> CallKind {
        operation.kind == .http && HTTPCall.requiresAuthorizer(operation.payload) ? .authorizedHTTP : operation.kind
    }

    mutating func register(
        _ executor: any CallExecutor, for kind: CallKind, now: Int64, into actions: inout PipelineActions
    ) {
        if kind == .http, (executor as? HTTPExecutor)?.authorizes == true {
            register(executor, for: .authorizedHTTP, now: now, into: &actions)
        }
        if let existing = executorIndex[kind] {
            executors[Int(existing)] = executor
            return
        }
        let number = Int32(executors.count)
        executors.append(executor)
        executorIndex[kind] = number
        guard let waiting = waitingForExecutor.removeValue(forKey: kind) else { return }
        for slot in waiting where graph[slot].executor < 0 {
            graph[slot].executor = number
            reevaluate(slot, now: now, into: &actions)
        }
    }
}
