import Foundation
import Relay
import Testing

@testable import RelayPostgres

/// The store's group commit as a state machine: each event's returned action, with plain values for waiters.
@Suite("PostgreSQL group commit")
struct PostgresCommitStateTests {
    private typealias State = PostgresCommitState<String, PostgresLogEntry>

    @Test("S26: the first wait writes everything gathered; waits meanwhile park and the next batch goes to one of them")
    func leaderAndHandOff() {
        var state = State()
        #expect(state.append(PostgresLogEntry(kind: "commit", body: Data([1]))) == 1)
        #expect(state.append(PostgresLogEntry(kind: "started", body: Data([2]))) == 2)
        let first = state.wait(for: 2, "first")
        #expect(
            first
                == .write(
                    PostgresBatch(
                        items: [
                            PostgresLogEntry(kind: "commit", body: Data([1])),
                            PostgresLogEntry(kind: "started", body: Data([2])),
                        ], through: 2)))
        // Records gathered while the write is in flight wait for the next one.
        #expect(state.append(PostgresLogEntry(kind: "finished", body: Data([3]))) == 3)
        #expect(state.wait(for: 3, "second") == .park)
        #expect(state.wait(for: 2, "early") == .park)
        let (done, next) = state.wrote(through: 2)
        #expect(done == ["early"])
        #expect(next?.0 == "second")
        #expect(next?.1 == PostgresBatch(items: [PostgresLogEntry(kind: "finished", body: Data([3]))], through: 3))
        #expect(state.wait(for: 1, "late") == .durable)
        let (rest, none) = state.wrote(through: 3)
        #expect(rest.isEmpty && none == nil)
        #expect(state.durable == 3)
    }

    @Test("S16/S26: a failed write fails every waiter, every later wait, and gathers nothing more")
    func failureIsFinal() {
        var state = State()
        _ = state.append(PostgresLogEntry(kind: "commit", body: Data([1])))
        _ = state.wait(for: 1, "writer")
        _ = state.append(PostgresLogEntry(kind: "commit", body: Data([2])))
        #expect(state.wait(for: 2, "parked") == .park)
        let failure = RelayError(.storageFailure, "the database went away")
        #expect(state.fail(failure) == ["parked"])
        #expect(state.wait(for: 2, "later") == .failed(failure))
        #expect(state.append(PostgresLogEntry(kind: "commit", body: Data([3]))) == 2)
    }
}
