/// An operation's entry in the pipeline's table.
///
/// Slots are reused once their operation is forgotten; `token` tells a queued entry
/// whether it still describes the slot's current life.
struct OperationSlot: Sendable {
    enum Phase: UInt8 {
        case free
        /// Waiting for dependencies, a hold, a retry, an earlier commit, or an executor.
        case pending
        /// In its sequence's ready queue.
        case ready
        case running
        case finished
    }

    /// How a finished operation ended, which is all its later dependents need.
    enum Ending: UInt8 {
        case unfinished
        case completed
        case skipped
        case failed
        case cancelled

        init(_ result: CallResult) {
            switch result {
            case .completed: self = .completed
            case .skipped: self = .skipped
            case .failed: self = .failed
            case .cancelled: self = .cancelled
            }
        }
    }

    static let never = Int64.min
    static let unbatched = UInt8.max

    // Fields are ordered so that the small ones fill each other's padding: a million pending operations keep a
    // million slots.

    /// The operation and its outcome, shared with handles; `nil` while the slot is free, so that vacating it retains
    /// no placeholder.
    private var occupant: OperationRecord?
    var phase: Phase = .pending
    var gated = false
    var cancelRequested = false
    /// Its place in its worker's batch while it runs as part of one, or ``unbatched``.
    var batchIndex = unbatched
    var token: UInt32 = 0
    var lane: Int32
    var executor: Int32
    var unfinishedDependencies: Int32 = 0
    var attempts: Int32 = 0
    /// The first operation waiting for this one.
    ///
    /// Most operations have at most one dependent (chains, fan-in), so the first is kept inline and only further ones
    /// allocate.
    var firstDependent: Int32 = -1
    /// A hold or a retry delay may keep it waiting for a time; the times are in side tables, since few operations
    /// have one (see ``PipelineStateMachine/notBefore(_:)``).
    var mayWaitForTime = false
    /// Finished while a dependency still lists it (cancelled first), so the sweep passed it over: the dependency's
    /// finish hands it back to the sweep, since a slot freed earlier could be read, or reused, as that dependent.
    var forgettingDeferred = false
    /// Purged while forgetting was deferred: the dependency's finish forgets it rather than keeping it.
    var purged = false
    var order: UInt64
    var snapshot: UInt64
    var moreDependents: [Int32] = []
    /// The result, once the operation has finished.
    var result: CallResult?
    var enqueuedAt: Int64
    var firstStartedAt = never
    var lastStartedAt = never
    var runNanoseconds: Int64 = 0
    var finishedAt = never
    var worker: UInt64 = 0

    /// What a new operation brings to its slot.
    struct Placement {
        var record: OperationRecord
        var lane: Int32
        var executor: Int32
        var order: UInt64
        var snapshot: UInt64
        var enqueuedAt: Int64
    }

    init(_ placement: Placement) {
        occupant = placement.record
        lane = placement.lane
        executor = placement.executor
        order = placement.order
        snapshot = placement.snapshot
        enqueuedAt = placement.enqueuedAt
    }
}

extension OperationSlot {
    var ending: Ending { result.map(Ending.init) ?? .unfinished }

    var dependents: [Int32] {
        firstDependent < 0 ? [] : [firstDependent] + moreDependents
    }

    mutating func addDependent(_ slot: Int32) {
        if firstDependent < 0 { firstDependent = slot } else { moreDependents.append(slot) }
    }

    // Each method below changes several fields in one access: every write through the table's subscript checks
    // that its storage is unique, so field-by-field writes on the hot path paid for that check once per field.

    /// Starts an attempt; returns its number.
    mutating func beginAttempt(worker: UInt64, batchIndex: UInt8, now: Int64) -> Int {
        phase = .running
        self.batchIndex = batchIndex
        attempts += 1
        if firstStartedAt == Self.never { firstStartedAt = now }
        lastStartedAt = now
        self.worker = worker
        return Int(attempts)
    }

    /// Gives back an attempt that was claimed but never ran: the operation is pending as before its start.
    mutating func returnAttempt() {
        phase = .pending
        worker = 0
        attempts -= 1
        if attempts == 0 { firstStartedAt = Self.never }
    }

    /// Ends the running attempt; the operation is pending until its outcome is applied.
    mutating func endAttempt(now: Int64) {
        phase = .pending
        worker = 0
        runNanoseconds += now - lastStartedAt
    }

    /// Marks the operation finished, and how it ended.
    mutating func finish(_ result: CallResult, now: Int64) {
        phase = .finished
        token &+= 1
        finishedAt = now
        self.result = result
        gated = false
    }

    /// The operation and its outcome, shared with handles; read only while the slot holds an operation.
    var record: OperationRecord {
        _read { yield occupant! }
    }

    /// Takes a vacated slot for a new operation: the token carries on, and every other field starts as in a new slot.
    ///
    /// Field by field, because building a new slot and assigning it copied all of it through a temporary on every
    /// enqueued operation. ``vacate()`` left the dependents empty and the ending unfinished.
    mutating func occupy(_ placement: Placement) {
        occupant = placement.record
        phase = .pending
        gated = false
        cancelRequested = false
        batchIndex = Self.unbatched
        lane = placement.lane
        executor = placement.executor
        unfinishedDependencies = 0
        attempts = 0
        order = placement.order
        snapshot = placement.snapshot
        enqueuedAt = placement.enqueuedAt
        firstStartedAt = Self.never
        lastStartedAt = Self.never
        runNanoseconds = 0
        finishedAt = Self.never
        mayWaitForTime = false
        forgettingDeferred = false
        purged = false
        worker = 0
    }

    /// Sets what storage kept of a restored operation; a finished one gets its result and when it finished.
    mutating func restore(
        attempts: Int32,
        firstStartedAt: Int64,
        result: (CallResult, finishedAt: Int64, ran: Int64)?
    ) {
        self.attempts = attempts
        self.firstStartedAt = firstStartedAt
        guard let (result, finishedAt, ran) = result else { return }
        phase = .finished
        self.result = result
        self.finishedAt = finishedAt
        runNanoseconds = ran
    }

    /// Leaves the graph without an outcome, for a shared store to run elsewhere: nothing finds the operation from now
    /// on, and the lanes' queues skip it; ``vacate()`` frees the slot.
    mutating func leave() {
        phase = .free
        token &+= 1
    }

    /// Marks the slot free and hands back its record, for the caller to release; the next allocation overwrites
    /// every other field.
    mutating func vacate() -> OperationRecord {
        let released = occupant.take()!
        firstDependent = -1
        moreDependents = []
        result = nil
        phase = .free
        token &+= 1
        return released
    }

    /// Hands over the dependents and forgets them.
    mutating func takeDependents() -> (first: Int32, more: [Int32]) {
        defer {
            firstDependent = -1
            moreDependents = []
        }
        return (firstDependent, moreDependents)
    }
}
