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

    /// The destinations the lane cannot reach, and the operations that wait for them.
    var offline = OfflineDestinations()

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
