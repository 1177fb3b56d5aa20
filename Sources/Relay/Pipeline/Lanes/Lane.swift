import Foundation

/// A sequence's scheduling state inside the pipeline.
struct Lane: Sendable {
    let name: CallSequence.Name
    /// The actor that runs the lane's workers; `nil` until the sequence is upserted (only after a reload).
    var sequence: CallSequence?
    var bunchSize: Int
    var algorithm: CallSequence.Algorithm
    var suspensionCount = 0
    var supervisorStarted = false

    var ready = ReadyQueue()
    var readyCount = 0
    /// Workers alive or requested.
    var workers = 0
    /// Workers woken or spawned that have not asked for work yet.
    var wakesInFlight = 0
    var pendingSpawns = 0
    /// A dispatch was asked for while dispatches were held.
    var dispatchHeld = false
    var idleWorkers = Waiters<WorkerWake>()
    var spawnWaiters = Waiters<Bool>()

    var counts = MetricsSnapshot.Counts()

    /// Set while the lane's destination cannot be reached; nothing starts until a probe succeeds.
    var offline: Offline? {
        didSet { offlineOperationID = offline?.operation.id }
    }
    /// The id of ``offline``'s operation, for the checks of every started and finished operation: testing the
    /// optional itself copied the whole `Offline`, existential and operation included.
    private(set) var offlineOperationID: UUID?

    /// With `.commitGraph`: unfinished operations per open commit, the open commits oldest first, and ready
    /// operations of later commits waiting for earlier ones.
    var commitRemaining: [UInt64: Int] = [:]
    var openCommits = FIFOQueue<UInt64>()
    var gated: [UInt64: [Int32]] = [:]

    init(name: CallSequence.Name, sequence: CallSequence?, bunchSize: Int, algorithm: CallSequence.Algorithm) {
        self.name = name
        self.sequence = sequence
        self.bunchSize = bunchSize
        self.algorithm = algorithm
    }

    var isRegistered: Bool { sequence != nil }

    /// Operations of the lane whose attempt is running.
    var running: Int { counts.running }

    var oldestOpenCommit: UInt64? { openCommits.first }

    /// While the lane is offline, gives the probing to `worker` unless another worker has it; `nil` when online.
    mutating func assignProbe(to worker: UInt64) -> PipelineStateMachine.NextJob? {
        guard offlineOperationID != nil, var offline else { return nil }
        guard !offline.probing, offline.prober == nil || offline.prober == worker else { return .park }
        offline.prober = worker
        offline.probing = true
        self.offline = offline
        return .probe(offline.executor, offline.operation)
    }

    /// Whether the lane is offline because of this operation.
    ///
    /// Mutating only so that callers reach the lane in place: a plain method call on an array element copied the whole
    /// lane on every finished operation.
    mutating func isOffline(for operation: UUID) -> Bool {
        offlineOperationID == operation
    }

    /// Whether the lane's destination cannot be reached.
    var isOffline: Bool { offlineOperationID != nil }

    /// A ready operation starts an attempt; one access to the lane rather than one per count.
    mutating func countStart() {
        readyCount -= 1
        counts.pending -= 1
        counts.running += 1
    }

    /// An attempt ended; its operation counts as pending until its outcome is applied.
    mutating func countAttemptEnd() {
        counts.running -= 1
        counts.pending += 1
    }

    /// Counts one more unfinished operation of `snapshot`; snapshots arrive in increasing order.
    mutating func openCommit(_ snapshot: UInt64) {
        if openCommits.last != snapshot { openCommits.append(snapshot) }
        commitRemaining[snapshot, default: 0] += 1
    }

    mutating func resetCommitGraph() {
        commitRemaining.removeAll()
        openCommits.removeAll()
    }
}

/// Why a lane is offline, and who probes for its return.
struct Offline: Sendable {
    let reason: String
    var executor: any CallExecutor
    let operation: CallOperation
    /// The worker that probes; `nil` until one claims the job.
    var prober: UInt64?
    var probing = false
}
