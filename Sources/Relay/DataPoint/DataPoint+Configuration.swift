extension DataPoint {
    /// Limits and policies of a DataPoint.
    public struct Configuration: Sendable {
        /// How long completed and skipped operations are kept for handles to read; an hour by default.
        ///
        /// Failed and cancelled ones are kept for ``deadLetterRetention``.
        ///
        /// Once an operation's window has passed, the next commit forgets it; when no commit comes, the DataPoint's
        /// timer does, within about a second. With a window of zero, an operation is forgotten as it ends, though
        /// ``DataPoint/handle(for:)`` may still find it until the next commit, or for about a second when none comes.
        /// An operation cancelled while one of its dependencies still runs is kept until that dependency ends too. A
        /// live ``CallHandle`` keeps its outcome either way.
        ///
        /// With ``maximumRetained`` and ``maximumRetainedBytes``, it makes the one retention policy (see
        /// ``RetentionPolicy``): a store keeps the same finished operations (see ``Storage/open(retention:)``), so that
        /// after a restart ``DataPoint/handle(for:)`` finds an operation that finished within the window, and no other.
        public var retention: Duration
        /// The most completed and skipped operations kept for re-attachment; 100,000 by default.
        ///
        /// Past it, the oldest are forgotten before their window ends.
        public var maximumRetained: Int
        /// The most bytes of completed and skipped operations kept, and of dead letters as many again; 64 MiB by
        /// default.
        ///
        /// They are counted by ``RetentionPolicy/retainedSize(payload:result:)``; past the bound, the oldest are
        /// forgotten before their window ends.
        public var maximumRetainedBytes: Int
        /// How long failed and cancelled operations, the dead letters, are kept with their last error and last
        /// response, so that they can be listed and replayed; a week by default.
        ///
        /// ``DataPoint/purge(_:)`` removes them sooner. See ``RetentionPolicy``.
        public var deadLetterRetention: Duration
        /// The most dead letters kept; 10,000 by default.
        ///
        /// Past it, the oldest go before their window ends.
        public var maximumDeadLetters: Int
        /// The largest payload an operation may carry; 16 MiB by default.
        public var maximumPayloadSize: Int
        /// How long a graceful shutdown lets running operations finish before cancelling them; 10 s by default.
        public var shutdownGracePeriod: Duration
        /// How many recent finished operations the latency percentiles cover; 10,000 by default.
        public var metricsWindow: Int
        /// How many events a subscriber buffers before dropping the oldest; 16,384 by default.
        public var eventBufferSize: Int
        /// The most unfinished operations, pending or running, that the DataPoint holds; 2,000,000 by default.
        ///
        /// A commit that would add operations past it fails at once with ``RelayError/Code/overloaded`` and changes
        /// nothing, so that a service under overload refuses work rather than growing its memory without bound. A
        /// transaction that enqueues nothing is never refused. Operations restored from a store count, and are kept
        /// even past a limit lowered since.
        public var maximumPending: Int
        /// How many of the latest events the DataPoint keeps for subscribers that come back after a sequence number
        /// (``DataPoint/events(after:bufferSize:)``); none by default.
        ///
        /// With none kept, events are built only while someone subscribes; with some kept, every event is built, which
        /// a busy DataPoint pays for in each transition.
        public var eventHistorySize: Int
        /// What watches the DataPoint's operations for logs, metrics and traces; none by default.
        ///
        /// See ``CallObserver``; the first observer's ``CallObserver/attempt(_:number:_:)`` runs outermost.
        public var observers: [any CallObserver] = []
        /// The most payload bytes of unfinished operations that the DataPoint holds; 1 GiB by default.
        ///
        /// Refused as ``maximumPending`` is.
        public var maximumPendingBytes: Int

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - retention: How long terminal outcomes are kept.
        ///   - maximumRetained: The most finished operations kept.
        ///   - maximumRetainedBytes: The most bytes of finished operations kept.
        ///   - deadLetterRetention: How long failed and cancelled operations are kept.
        ///   - maximumDeadLetters: The most failed and cancelled operations kept.
        ///   - maximumPayloadSize: The largest payload, in bytes.
        ///   - shutdownGracePeriod: How long a graceful shutdown waits for running operations.
        ///   - metricsWindow: How many finished operations the percentiles cover.
        ///   - eventBufferSize: How many events a subscriber buffers.
        ///   - maximumPending: The most unfinished operations.
        ///   - maximumPendingBytes: The most payload bytes of unfinished operations.
        ///   - eventHistorySize: How many of the latest events to keep for subscribers that come back.
        public init(
            retention: Duration = .seconds(3600),
            maximumRetained: Int = 100_000,
            maximumRetainedBytes: Int = 64 << 20,
            deadLetterRetention: Duration = .seconds(7 * 86_400),
            maximumDeadLetters: Int = 10_000,
            maximumPayloadSize: Int = 16 << 20,
            shutdownGracePeriod: Duration = .seconds(10),
            metricsWindow: Int = 10_000,
            eventBufferSize: Int = 16_384,
            maximumPending: Int = 2_000_000,
            maximumPendingBytes: Int = 1 << 30,
            eventHistorySize: Int = 0
        ) {
            self.retention = retention
            self.maximumRetained = maximumRetained
            self.maximumRetainedBytes = maximumRetainedBytes
            self.deadLetterRetention = deadLetterRetention
            self.maximumDeadLetters = maximumDeadLetters
            self.maximumPayloadSize = maximumPayloadSize
            self.shutdownGracePeriod = shutdownGracePeriod
            self.metricsWindow = metricsWindow
            self.eventBufferSize = eventBufferSize
            self.maximumPending = maximumPending
            self.maximumPendingBytes = maximumPendingBytes
            self.eventHistorySize = eventHistorySize
        }

        /// What the DataPoint and its store keep of finished operations.
        public var retentionPolicy: RetentionPolicy {
            RetentionPolicy(
                window: retention, maximumOperations: maximumRetained, maximumBytes: maximumRetainedBytes,
                deadLetterWindow: deadLetterRetention, maximumDeadLetters: maximumDeadLetters,
                maximumDeadLetterBytes: maximumRetainedBytes)
        }
    }
}
