import Foundation

/// The document's side of the core's transitions: changes that completions stage, and the transactions that stage
/// changes of their own.
extension PipelineCore {
    /// Stages the model changes a transition's completions committed in the document, inside that transition;
    /// readers see them once the transition is durable.
    func applyDocumentChanges(from machine: inout PipelineStateMachine) {
        var changes: [ModelChange] = []
        swap(&changes, &machine.documentChanges)
        document.withLock { $0.stage(changes) }
        machine.stagedModels = true
    }

    /// A transaction of the document's registered types, to stage changes in.
    func newTransaction() -> Transaction {
        Transaction(
            collections: document.withLock { $0.registrations }, maximumSize: configuration.maximumPayloadSize)
    }
}
