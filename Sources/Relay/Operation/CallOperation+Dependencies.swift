import Foundation

/// Dependencies added one at a time, by id or by operation, as YapDatabaseCloudCore names them.
extension CallOperation {
    /// Makes this operation wait for another.
    ///
    /// ```swift
    /// var notify = CallOperation(kind: "notify")
    /// notify.addDependency(upload)
    /// try await point.enqueue([upload, notify])
    /// ```
    ///
    /// - Parameter operation: The operation that must finish first, in this commit or known already.
    public mutating func addDependency(_ operation: CallOperation) {
        dependencies.insert(operation.id)
    }

    /// Makes this operation wait for the operation with this id.
    ///
    /// - Parameter id: The id of the operation that must finish first.
    public mutating func addDependency(_ id: UUID) {
        dependencies.insert(id)
    }

    /// Makes this operation wait for each of `operations`.
    ///
    /// - Parameter operations: The operations that must finish first.
    public mutating func addDependencies(_ operations: some Sequence<CallOperation>) {
        dependencies.formUnion(operations.lazy.map(\.id))
    }

    /// Makes this operation wait for the operations with these ids.
    ///
    /// - Parameter ids: The ids of the operations that must finish first.
    public mutating func addDependencies(_ ids: some Sequence<UUID>) {
        dependencies.formUnion(ids)
    }
}
