import PostgresNIO
import Synchronization

/// The guards of a pool's connections (see ``PostgresQueryGuard``), which abandon a query whose task is cancelled: one
/// per connection, made when the connection is first used and dropped when it closes.
final class PostgresGuards: Sendable {
    private let guards = Mutex<[ObjectIdentifier: PostgresQueryGuard]>([:])

    /// The guard of `connection`.
    func guarding(_ connection: PostgresConnection) -> PostgresQueryGuard {
        let key = ObjectIdentifier(connection)
        let (found, made) = guards.withLock { guards -> (PostgresQueryGuard, Bool) in
            if let existing = guards[key] { return (existing, false) }
            let made = PostgresQueryGuard(connection, abandonsWhenCancelled: true)
            guards[key] = made
            return (made, true)
        }
        // The entry keeps the connection alive, so its identifier is not reused before the entry goes.
        if made { connection.closeFuture.whenComplete { [weak self] _ in self?.forget(key) } }
        return found
    }

    private func forget(_ key: ObjectIdentifier) {
        _ = guards.withLock { $0.removeValue(forKey: key) }
    }
}
