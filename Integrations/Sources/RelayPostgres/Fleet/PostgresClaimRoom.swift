/// The room that a claim under way in one process has reserved, so that its two claimers (the loop that claims, and
/// the transaction that records outcomes and claims the slots they free) never hold more than the claim limit, and
/// never claim at once.
///
/// One claim at a time keeps the start order (S4, S28): the database hands a sequence's operations out in start order
/// under its row's lock, but two claims answered at once could reach the DataPoint in the other order, and the later
/// operation would start first.
///
/// A wake of the loop that finds a transaction recording outcomes claiming is not lost: that transaction's claim may
/// have read the database before the work the wake announced was committed, so the loop is woken again once the
/// transaction gives its room back. A transaction that finds the loop claiming claims nothing, and wakes the loop.
///
/// Outcomes gathered and not yet written go first: their transaction claims the slots they free, so the loop waits for
/// it rather than take the room and leave that transaction claiming nothing, a round trip more for the same slots. The
/// loop waits for their write as the DataPoint does, and makes it if nobody else waits: a store writes nothing that
/// nobody waits on, and outcomes left unwritten must not keep the loop from claiming.
struct PostgresClaimRoom: Sendable {
    /// Who asks for room.
    enum Claimer: Sendable {
        /// The loop that claims each time it is woken.
        case loop
        /// A transaction that records outcomes and claims what they free.
        case outcomes
    }

    /// What a claimer does after asking for room.
    enum Reservation: Sendable, Equatable {
        /// Claims at most this many operations, then gives the room back (``release(_:)``).
        case claim(Int)
        /// The loop waits until outcomes gathered through this position are written: their write claims first.
        case awaitOutcomes(through: UInt64)
        /// Claims nothing: there is no room, or the other claimer is claiming.
        case none
    }

    private let limit: Int
    /// Whether a claim under way holds room.
    private var claiming = false
    /// Whether the loop found no room while a claim under way held some.
    private var loopRefused = false
    /// The position of the last outcome gathered for a write that claims the slot it frees, and how far writes went:
    /// positions rather than counts, so that a write noted before its outcomes were counted leaves nothing behind.
    private var outcomesThrough: UInt64 = 0
    private var writtenThrough: UInt64 = 0

    /// Room for at most `limit` claimed operations waiting for a worker.
    init(limit: Int) {
        self.limit = limit
    }

    /// Reserves the room a claim by `claimer` may fill beside `waiting` operations that wait for a worker.
    mutating func reserve(for claimer: Claimer, waiting: Int) -> Reservation {
        if claimer == .loop, outcomesThrough > writtenThrough { return .awaitOutcomes(through: outcomesThrough) }
        guard !claiming else {
            if claimer == .loop { loopRefused = true }
            return .none
        }
        let room = max(0, limit - waiting)
        claiming = room > 0
        return room > 0 ? .claim(room) : .none
    }

    /// Gives back the room of a claim that ended.
    ///
    /// - Returns: Whether the loop must be woken: it found no room while this claim held some.
    mutating func release(_ room: Int) -> Bool {
        guard room > 0 else { return false }
        claiming = false
        guard loopRefused else { return false }
        loopRefused = false
        return true
    }

    /// Outcomes whose write claims the slots they free were gathered, the last at `position`.
    mutating func gathered(outcomesThrough position: UInt64) {
        outcomesThrough = max(outcomesThrough, position)
    }

    /// What was gathered through `position` is written.
    mutating func wrote(through position: UInt64) {
        writtenThrough = max(writtenThrough, position)
    }
}
