import Foundation
import Relay

/// What a record of an operation this process runs changes in the fleet's tables.
enum PostgresFleetWrite: Sendable, Equatable {
    /// An attempt began: the first of a claim marks it begun; a later one, a retry within the claim, is counted.
    case started(UUID, attempt: Int)
    /// The operation ended; recorded if this process still holds it, with the changes its attempt staged (S21) and
    /// how long its attempts ran.
    case finished(UUID, CallResult, changes: [ModelChange], ran: Duration)
    /// Shutdown interrupted the attempt: the claim goes back with the attempt counted.
    case interrupted(UUID)
    /// The attempt's destination did not answer: the claim goes back with the attempt uncounted, and the destination
    /// is offline for the whole fleet until a probe of it gets an answer.
    case offline(UUID)
    /// The attempt asked for a retry: the claim goes back with the attempt counted, to be claimed again from then on,
    /// and its sequence's slot is free meanwhile.
    case retry(UUID, at: Date)

    /// The operation whose claim this write lets go of, this process's part in it over: it ended, or went back to the
    /// fleet.
    var releasedClaim: UUID? {
        switch self {
        case .finished(let id, _, _, _), .interrupted(let id), .offline(let id), .retry(let id, _): id
        case .started: nil
        }
    }

    /// Whether this is an outcome whose write claims the slot it frees: one with no staged changes, recorded by
    /// ``PostgresQueue/finish(_:thenClaiming:)``.
    var claimsFreedSlot: Bool {
        if case .finished(_, _, let changes, _) = self { changes.isEmpty } else { false }
    }

    /// The change a record makes, or `nil` for a record that changes nothing in the fleet's tables.
    init?(_ record: StorageRecord) {
        switch record.kind {
        case .started:
            guard let id = record.operationID, let attempt = record.attempt else { return nil }
            self = .started(id, attempt: attempt)
        case .finished:
            guard let id = record.operationID, let result = record.result else { return nil }
            self = .finished(id, result, changes: record.modelChanges, ran: record.runTime ?? .zero)
        case .interrupted:
            guard let id = record.operationID else { return nil }
            self = .interrupted(id)
        case .attemptReturned:
            guard let id = record.operationID, record.returnedUnanswered == true else { return nil }
            self = .offline(id)
        case .retryScheduled:
            guard let id = record.operationID, let date = record.retryDate else { return nil }
            self = .retry(id, at: date)
        default:
            return nil
        }
    }
}

/// A claim this process holds: the attempt that fences the operation's outcome, whether an attempt began here, the
/// operation's retry policy's `maximumElapsed`, which bounds how long it may wait for an offline destination, and
/// whether its outcome is being committed, or is committed already, with the relations its attempt staged, ahead of
/// the DataPoint's record of it.
struct PostgresHeldClaim: Sendable, Hashable {
    var attempt: Int
    var began = false
    var offlineLimit: Duration?
    var stagedCommit = StagedCommit.none

    /// How far the commit of an outcome with staged changes has come.
    enum StagedCommit: Sendable, Hashable {
        case none
        /// Under way: a lease the renewal then finds ended was ended by that commit, not lost.
        case underWay
        /// Committed: the database runs the operation no more, so its claim holds no lease.
        case done
    }
}
