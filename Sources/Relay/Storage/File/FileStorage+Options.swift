extension FileStorage {
    /// When a file store syncs its journal to disk.
    ///
    /// An extensible struct rather than an enum: a release may add policies, and a new case of a public enum would
    /// break every exhaustive `switch` over it. Compare a policy with `==`.
    public struct FsyncPolicy: Sendable, Hashable {
        /// The policies this release knows; the package's own code switches over them.
        package enum Value: Sendable, Hashable {
            case always
            case interval(Duration)
            case never
        }

        package let value: Value

        /// Group commit, the default: nothing is acknowledged before it is synced.
        ///
        /// Transitions that arrive while a sync is in flight share the next one. Survives process crashes and power
        /// loss.
        public static let always = FsyncPolicy(value: .always)

        /// Writes before acknowledging, and syncs at most once an interval.
        ///
        /// A write that comes at least one interval after the last sync is synced, and so is the close. Survives
        /// process crashes; a power loss may lose what was acknowledged since the last sync. The interval is measured
        /// on the store's clock.
        public static func interval(_ interval: Duration) -> FsyncPolicy { FsyncPolicy(value: .interval(interval)) }

        /// Writes before acknowledging and never syncs.
        ///
        /// Survives process crashes only.
        ///
        /// - Warning: Unsafe: a power loss or kernel crash may lose any acknowledged transition, or leave a
        ///   journal that no longer matches what callers were told. Meant for benchmarks only.
        public static let never = FsyncPolicy(value: .never)
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
