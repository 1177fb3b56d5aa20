import Foundation
import Testing

@testable import RelayPostgres

/// What the poll looks up for the handles awaited in a process, as a state machine: each event, then the sweep.
@Suite("PostgreSQL backstop")
struct PostgresBackstopTests {
    @Test("S29: while LISTEN is live, the poll reads only joined commits not yet seen; without it, everything")
    func sweepFollowsTheListener() {
        var backstop = PostgresBackstop()
        #expect(backstop.sweep() == .everything && !backstop.isListening)
        let (seen, rolledBack, unawaited) = (UUID(), UUID(), UUID())
        backstop.joined([seen, rolledBack, unawaited])
        #expect(backstop.sweep() == .everything)

        backstop.listened()
        #expect(backstop.sweep() == .only([seen, rolledBack, unawaited]) && backstop.isListening)
        // The database holds one, one's handle failed, and nobody awaits the third any more.
        backstop.settled([seen])
        backstop.settled([rolledBack, unawaited])
        #expect(backstop.sweep() == .only([]))

        // A lost connection may have missed announcements: everything, until the listener is back.
        let later = UUID()
        backstop.joined([later])
        backstop.lostListener()
        #expect(backstop.sweep() == .everything)
        backstop.listened()
        #expect(backstop.sweep() == .only([later]))
    }

    @Test("S31: operations let go of without their ends recorded are polled until they end, listening or not")
    func releasedArePolledUntilTheyEnd() {
        var backstop = PostgresBackstop()
        backstop.listened()
        let (ended, running) = (UUID(), UUID())
        backstop.released([ended, running])
        #expect(backstop.sweep() == .only([ended, running]))
        // Held in the database is not enough, as it is for a joined commit: only an end stops the polling.
        backstop.settled([ended, running])
        #expect(backstop.sweep() == .only([ended, running]))
        backstop.ended([ended])
        #expect(backstop.sweep() == .only([running]))
        backstop.lostListener()
        #expect(backstop.sweep() == .everything)
    }
}
