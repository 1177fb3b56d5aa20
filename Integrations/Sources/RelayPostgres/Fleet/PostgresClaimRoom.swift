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
struct PostgresClaimRoom: Sendable {
    /// Who asks for room.
    enum Claimer: Sendable {
        /// The loop that claims each time it is woken.
        case loop
        /// A transaction that records outcomes and claims what they free.
        case outcomes
    }

    private let limit: Int
    /// Whether a claim under way holds room.
    private var claiming = false
    /// Whether the loop found no room while a claim under way held some.
    private var loopRefused = false

    /// Room for at most `limit` claimed operations waiting for a worker.
    init(limit: Int) {
        self.limit = limit
    }

    /// Reserves the room a claim may fill beside `waiting` operations that wait for a worker; 0 when there is none,
    /// or another claim is under way.
    mutating func reserve(for claimer: Claimer, waiting: Int) -> Int {
        guard !claiming else {
            if claimer == .loop { loopRefused = true }
            return 0
        }
        let room = max(0, limit - waiting)
        claiming = room > 0
        return room
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
}
