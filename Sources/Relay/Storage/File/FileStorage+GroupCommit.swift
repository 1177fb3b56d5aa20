import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Group commit: one writer at a time writes everything appended so far, and waiters arriving meanwhile share the
/// next write.
extension FileStorage {
    enum Role {
        case done, lead, follow
        case failed(RelayError)
    }

    /// Waits as a follower; `true` when handed the lead.
    func follow(until position: UInt64?) async throws -> Bool {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
            let immediate = state.withLock { state -> Result<Bool, RelayError>? in
                if let position, state.durable >= position { return .success(false) }
                if let failure = state.failure { return .failure(failure) }
                if !state.flushing {
                    state.flushing = true
                    return .success(true)
                }
                state.waiters.append(Waiter(position: position, continuation: continuation))
                return nil
            }
            if let immediate { continuation.resume(with: immediate) }
        }
    }

    /// Runs `body` as the only writer, then passes the lead on.
    func lead(_ body: () async throws -> Void) async throws {
        let leading = state.withLock { state in
            if state.flushing { return false }
            state.flushing = true
            return true
        }
        if !leading, !(try await follow(until: nil)) { return }
        do {
            try await body()
        } catch {
            fail(error)
            throw error
        }
        handOff()
    }

    /// Writes everything appended so far in one write and, as the policy says, one sync.
    func leadOneRound() async throws {
        let round = state.withLock { state -> Round in
            guard state.phase == .open else {
                return Round(bytes: [], target: state.durable, journal: -1, sync: false)
            }
            let bytes = state.pending.bytes
            state.pending.bytes.removeAll(keepingCapacity: true)
            return Round(bytes: bytes, target: state.appended, journal: state.journal, sync: shouldSync(&state))
        }
        do {
            let path = paths.journal
            if round.journal < 0 {
                throw state.withLock { $0.failure } ?? RelayError(.storageFailure, "the store is not open")
            }
            if !round.bytes.isEmpty || round.sync {
                try await onIO { () throws in
                    try round.bytes.withUnsafeBytes { (buffer) throws in
                        try POSIXFile.writeAll(round.journal, buffer, path: path)
                    }
                    if round.sync { try POSIXFile.sync(round.journal, path: path) }
                }
            }
            let compactNow = state.withLock { state in
                state.durable = max(state.durable, round.target)
                if round.sync { state.syncs += 1 }
                state.journalSize += round.bytes.count
                return state.journalSize >= options.compactionThreshold
            }
            if compactNow { try await compact() }
        } catch {
            fail(error)
            throw error
        }
        handOff()
    }

    func shouldSync(_ state: inout State) -> Bool {
        switch options.fsync {
        case .always:
            return true
        case .never:
            return false
        case .interval(let interval):
            let now = clock.now
            guard let last = state.lastSync, now - last < interval.relayNanoseconds else {
                state.lastSync = now
                return true
            }
            return false
        }
    }

    /// Resumes the waiters that are durable now and hands the lead to the first one that is not.
    func handOff() {
        let (done, next, descriptors) = state.withLock { state -> ([Waiter], Waiter?, [Int32]) in
            var done: [Waiter] = []
            var remaining: [Waiter] = []
            for waiter in state.waiters {
                if let position = waiter.position, position <= state.durable {
                    done.append(waiter)
                } else {
                    remaining.append(waiter)
                }
            }
            let next = remaining.isEmpty ? nil : remaining.removeFirst()
            state.waiters = remaining
            if next == nil { state.flushing = false }
            return (done, next, state.takeDescriptorsIfReleased())
        }
        for fd in descriptors { POSIXFile.close(fd) }
        for waiter in done { waiter.continuation.resume(returning: false) }
        next?.continuation.resume(returning: true)
    }

    func fail(_ error: any Error) {
        let failure = error as? RelayError ?? RelayError(.storageFailure, "the store failed: \(error)")
        let (waiters, descriptors) = state.withLock { state in
            state.failure = state.failure ?? failure
            state.flushing = false
            defer { state.waiters = [] }
            return (state.waiters, state.takeDescriptorsIfReleased())
        }
        for fd in descriptors { POSIXFile.close(fd) }
        for waiter in waiters { waiter.continuation.resume(throwing: failure) }
    }

    /// Stops the store: no more writes, waiters fail, and the files close once no write is in flight.
    func release(failure: RelayError) {
        let (waiters, descriptors) = state.withLock { state -> ([Waiter], [Int32]) in
            state.phase = .closed
            state.failure = state.failure ?? failure
            state.pending.bytes = []
            let waiters = state.waiters
            state.waiters = []
            // A leader mid-write still uses the files; it closes them when its round ends.
            return (waiters, state.flushing ? [] : state.takeDescriptorsIfReleased())
        }
        for fd in descriptors { POSIXFile.close(fd) }
        for waiter in waiters { waiter.continuation.resume(throwing: failure) }
    }
}
