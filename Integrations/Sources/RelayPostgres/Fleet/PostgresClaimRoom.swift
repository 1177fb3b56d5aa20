/// The room that claims under way in one process have reserved, so that its two claimers (the loop that claims, and
/// the transaction that records outcomes and claims the slots they free) never hold more than the claim limit between
/// them.
///
/// A wake of the loop that finds the room reserved by a transaction recording outcomes is not lost: that transaction's
/// claim may have read the database before the work the wake announced was committed, so the loop is woken again once
/// the transaction gives its room back.
struct PostgresClaimRoom: Sendable {
    /// Who asks for room.
    enum Claimer: Sendable {
        /// The loop that claims each time it is woken.
        case loop
        /// A transaction that records outcomes and claims what they free.
        case outcomes
    }

    private let limit: Int
    private var underway = 0
    /// Whether the loop found no room while a claim under way held some.
    private var loopRefused = false

    /// Room for at most `limit` claimed operations waiting for a worker.
    init(limit: Int) {
        self.limit = limit
    }

    /// Reserves the room a claim may fill beside `waiting` operations that wait for a worker; 0 when there is none.
    mutating func reserve(for claimer: Claimer, waiting: Int) -> Int {
        let room = max(0, limit - waiting - underway)
        if room == 0, underway > 0, claimer == .loop { loopRefused = true }
        underway += room
        return room
    }

    /// Gives back the room of a claim that ended.
    ///
    /// - Returns: Whether the loop must be woken: it found no room while this claim held some.
    mutating func release(_ room: Int) -> Bool {
        underway -= room
        guard loopRefused, room > 0 else { return false }
        loopRefused = false
        return true
    }
}
