import Foundation
import Relay

/// What a store holds, as `relay status`, `list`, `show` and `events` show it.
public struct StoreContents: Sendable {
    /// The store's operations, sequences and models.
    public var state: StoredState
    /// The operations that a process runs now.
    public var running: Set<UUID>
    /// Whether a process runs on the store now.
    public var isLive: Bool

    /// What a store holds.
    public init(state: StoredState, running: Set<UUID>, isLive: Bool) {
        self.state = state
        self.running = running
        self.isLive = isLive
    }
}
