import Testing

@testable import RelayPostgres

/// The room of a process's two claimers, as a state machine: each reservation and release, then what it returns.
@Suite("PostgreSQL claim room")
struct PostgresClaimRoomTests {
    @Test("S31: the two claimers never hold more than the limit between them, beside what waits for a worker")
    func roomIsShared() {
        var room = PostgresClaimRoom(limit: 64)
        #expect(room.reserve(for: .outcomes, waiting: 10) == .claim(54))
        #expect(room.reserve(for: .outcomes, waiting: 10) == .none)
        #expect(room.release(54) == false)
        #expect(room.reserve(for: .loop, waiting: 0) == .claim(64))
        #expect(room.release(64) == false)
        // A DataPoint whose workers are busy leaves no room, and nothing under way to wake the loop when it ends.
        #expect(room.reserve(for: .loop, waiting: 64) == .none)
        #expect(room.reserve(for: .outcomes, waiting: 60) == .claim(4))
        #expect(room.release(4) == false)
    }

    @Test("S31: a wake of the loop that finds the room reserved by outcomes being recorded wakes it again after them")
    func refusedWakeIsKept() {
        var room = PostgresClaimRoom(limit: 64)
        #expect(room.reserve(for: .outcomes, waiting: 0) == .claim(64))
        // Work announced now may be committed after the transaction's claim read the database.
        #expect(room.reserve(for: .loop, waiting: 0) == .none)
        #expect(room.release(64) == true)
        // Once: the loop claims what is left, and a later release has nothing to make up for.
        #expect(room.reserve(for: .outcomes, waiting: 0) == .claim(64))
        #expect(room.release(64) == false)
        // The loop refuses nobody: the transaction that finds no room claims nothing, and wakes the loop itself.
        #expect(room.reserve(for: .loop, waiting: 0) == .claim(64))
        #expect(room.reserve(for: .outcomes, waiting: 0) == .none)
        #expect(room.release(64) == false)
    }

    @Test("S31: outcomes still to be written claim first; the loop waits for their write, not for a wake")
    func outcomesClaimFirst() {
        var room = PostgresClaimRoom(limit: 64)
        room.gathered(outcomesThrough: 3)
        // Their write claims the slots they free: the loop would take the room and leave that write claiming nothing.
        #expect(room.reserve(for: .loop, waiting: 0) == .awaitOutcomes(through: 3))
        #expect(room.reserve(for: .outcomes, waiting: 0) == .claim(64))
        // The loop was refused for the outcomes, not for the claim: it waits for their write, so no wake is owed.
        #expect(room.release(64) == false)
        room.gathered(outcomesThrough: 5)
        room.wrote(through: 3)
        #expect(room.reserve(for: .loop, waiting: 0) == .awaitOutcomes(through: 5))
        room.wrote(through: 6)
        #expect(room.reserve(for: .loop, waiting: 0) == .claim(64))
        #expect(room.release(64) == false)
        // A write noted before its outcomes were counted leaves nothing for the loop to wait for.
        room.wrote(through: 8)
        room.gathered(outcomesThrough: 7)
        #expect(room.reserve(for: .loop, waiting: 0) == .claim(64))
    }

    @Test("S4/S28: a process claims once at a time, so that its DataPoint takes claims in the order they were made")
    func oneClaimAtATime() {
        var room = PostgresClaimRoom(limit: 64)
        // Room is left beside this claim, but a second claim answered first would start later operations first.
        #expect(room.reserve(for: .outcomes, waiting: 60) == .claim(4))
        #expect(room.reserve(for: .loop, waiting: 0) == .none)
        #expect(room.release(4) == true)
        #expect(room.reserve(for: .loop, waiting: 0) == .claim(64))
        #expect(room.reserve(for: .outcomes, waiting: 0) == .none)
        #expect(room.release(64) == false)
    }
}
