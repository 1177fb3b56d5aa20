extension FileStorage {
    /// When a file store syncs its journal to disk.
    ///
    /// An open enum: a release may add policies, so a `switch` over it needs a `default`.
    public enum FsyncPolicy: Sendable, Hashable {
        /// Group commit, the default: nothing is acknowledged before it is synced, and transitions that arrive while
        /// a sync is in flight share the next one. Survives process crashes and power loss.
        case always
        /// Writes before acknowledging, and syncs a write that comes at least one interval after the last sync,
        /// and on close. Survives process crashes; a power loss may lose what was acknowledged since the last sync.
        /// The interval is measured on the store's clock.
        case interval(Duration)
        /// Writes before acknowledging and never syncs. Survives process crashes only.
        ///
        /// - Warning: Unsafe: a power loss or kernel crash may lose any acknowledged transition, or leave a
        ///   journal that no longer matches what callers were told. Meant for benchmarks only.
        case never
    }

    /// How a file store writes and compacts.
    public struct Options: Sendable, Hashable {
        /// When the journal is synced; ``FsyncPolicy/always`` by default.
        public var fsync: FsyncPolicy
        /// The journal size, in bytes, past which the store seals it and folds it into a new snapshot beside new
        /// writes; 64 MiB by default.
        public var compactionThreshold: Int

        /// Creates options.
        ///
        /// - Parameters:
        ///   - fsync: When the journal is synced.
        ///   - compactionThreshold: The journal size that triggers compaction.
        public init(
            fsync: FsyncPolicy = .always, compactionThreshold: Int = 64 << 20
        ) {
            self.fsync = fsync
            self.compactionThreshold = compactionThreshold
        }
    }
}
