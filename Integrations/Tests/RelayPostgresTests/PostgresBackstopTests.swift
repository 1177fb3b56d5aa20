import Foundation
import Testing

@testable import RelayPostgres

/// What the poll looks up for the handles awaited in a process, as a state machine: each event, then the sweep.
@Suite("PostgreSQL backstop")
struct PostgresBackstopTests {
    @Test("S29: while LISTEN is live, the poll reads only joined commits not yet seen; without it, everything")
    func sweepFollowsTheListener() {
        var backstop = PostgresBackstop()
        #expect(backstop.sweep() == .everything)
        let (seen, rolledBack, unawaited) = (UUID(), UUID(), UUID())
        backstop.joined([seen, rolledBack, unawaited])
        #expect(backstop.sweep() == .everything)

        backstop.listened()
        #expect(backstop.sweep() == .only([seen, rolledBack, unawaited]))
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
}
