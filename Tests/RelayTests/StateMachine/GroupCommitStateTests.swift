import Testing

@testable import Relay

/// Group commit's state (S16: many transitions share one fsync, nothing acknowledged before it is durable), driven
/// event by event; each event's returned action is what the shell would do.
@Suite("Group commit state")
struct GroupCommitStateTests {
    /// A state whose batches are arrays of record names and whose waiters are numbers.
    typealias State = GroupCommitState<[String], Int>

    @Test("S16: the first wait starts one drain, and later waits join it")
    func firstWaitStartsTheDrain() {
        var state = State(empty: [])
        let first = state.append(transitions: 1) { $0.append("a") }
        let second = state.append(transitions: 2) { $0 += ["b", "c"] }
        #expect(first == 1)
        #expect(second == 3)
        guard case .startDrain = state.wait(for: first, 1) else {
            Issue.record("the first wait did not start a drain")
            return
        }
        guard case .none = state.wait(for: second, 2) else {
            Issue.record("a second wait started another drain")
            return
        }
    }

    @Test("S16: a round takes everything appended, and its write resumes exactly the waiters it made durable")
    func roundTakesEverythingAndResumesItsWaiters() {
        var state = State(empty: [])
        let first = state.append(transitions: 1) { $0.append("a") }
        _ = state.wait(for: first, 1)
        let round = state.nextRound()
        #expect(round?.batch == ["a"])
        #expect(round?.target == 1)
        // Arrives while the write is in flight: it goes into the next round.
        let second = state.append(transitions: 1) { $0.append("b") }
        _ = state.wait(for: second, 2)
        #expect(state.wrote(through: 1) == [1])
        let next = state.nextRound()
        #expect(next?.batch == ["b"])
        #expect(state.wrote(through: 2) == [2])
        #expect(state.nextRound() == nil)
        guard case .resume(.success) = state.wait(for: second, 3) else {
            Issue.record("a wait for what is durable did not end at once")
            return
        }
    }

    @Test("S16: when a drain has ended, the next wait starts another")
    func endedDrainRestarts() {
        var state = State(empty: [])
        _ = state.wait(for: state.append(transitions: 1) { $0.append("a") }, 1)
        _ = state.nextRound()
        _ = state.wrote(through: 1)
        #expect(state.nextRound() == nil)
        #expect(state.endWork() == nil)
        guard case .startDrain = state.wait(for: state.append(transitions: 1) { $0.append("b") }, 2) else {
            Issue.record("a wait after the drain ended did not start one")
            return
        }
    }

    @Test("S16: a failed write fails every waiter and every later wait, and ends the drain")
    func failureFailsWaiters() {
        var state = State(empty: [])
        _ = state.wait(for: state.append(transitions: 1) { $0.append("a") }, 1)
        _ = state.nextRound()
        _ = state.wait(for: state.append(transitions: 1) { $0.append("b") }, 2)
        #expect(state.fail(RelayError(.storageFailure, "disk full")) == [1, 2])
        #expect(state.nextRound() == nil)
        guard case .resume(.failure(let failure)) = state.wait(for: 2, 3) else {
            Issue.record("a wait after a failure did not fail at once")
            return
        }
        #expect(failure.code == .storageFailure)
    }

    @Test("S16: the next round is taken while the last one waits for its sync, and each sync resumes its own waiters")
    func roundTakenBesideASync() {
        var state = State(empty: [])
        _ = state.wait(for: state.append(transitions: 1) { $0.append("a") }, 1)
        #expect(state.nextRound()?.target == 1)
        // Written and syncing: what arrives meanwhile is the next round, taken before the sync ends.
        _ = state.wait(for: state.append(transitions: 2) { $0 += ["b", "c"] }, 2)
        let next = state.nextRound()
        #expect(next?.batch == ["b", "c"])
        #expect(next?.target == 3)
        #expect(state.nextRound() == nil, "nothing is written twice")
        #expect(state.wrote(through: 1) == [1])
        #expect(state.wrote(through: 3) == [2])
    }

    @Test("S16: closing fails the waiters, and runs the closing work once no work is queued or running")
    func closingWaitsForIdle() {
        var state = State(empty: [])
        _ = state.wait(for: state.append(transitions: 1) { $0.append("a") }, 1)
        _ = state.nextRound()
        let closed = state.close(failure: RelayError(.storageFailure, "closed")) {}
        #expect(closed.waiters == [1])
        #expect(closed.closing == nil, "a write is in flight")
        #expect(state.append(transitions: 1) { $0.append("b") } == 1, "nothing is appended after closing")
        #expect(state.nextRound() == nil)
        #expect(state.endWork() != nil, "the drain ended, so the closing work runs")
    }
}
