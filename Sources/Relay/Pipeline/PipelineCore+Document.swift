import Foundation

/// The document's side of the core: the transactions that stage changes of their own.
extension PipelineCore {
    /// A transaction of the document's registered types, to stage changes in.
    func newTransaction() -> Transaction {
        Transaction(
            collections: document.withLock { $0.registrations }, maximumSize: configuration.maximumPayloadSize)
    }
}
