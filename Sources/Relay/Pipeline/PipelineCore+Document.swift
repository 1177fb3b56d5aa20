import Foundation

/// The document's side of the core. The document is part of the state machine's state: read through the read
/// accessor, changed only by events, so that a commit's models and operations change under one lock.
extension PipelineCore {
    /// Reads the document.
    func readDocument<Value: Sendable, Failure: Error>(
        _ body: (borrowing Document) throws(Failure) -> Value
    ) throws(Failure) -> Value {
        try read { (machine) throws(Failure) -> Value in try body(machine.document) }
    }

    /// Changes the document outside a commit: registrations, decoded copies kept by readers, and durability.
    @discardableResult
    func changeDocument<Value: Sendable, Failure: Error>(
        _ body: (inout Document) throws(Failure) -> Value
    ) throws(Failure) -> Value {
        try apply { (machine, _) throws(Failure) -> Value in try body(&machine.document) }
    }

    /// A transaction of the document's registered types, to stage changes in.
    func newTransaction() -> Transaction {
        Transaction(
            collections: readDocument { $0.registrations }, maximumSize: configuration.maximumPayloadSize)
    }
}
