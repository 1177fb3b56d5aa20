import Foundation

/// Operations listed, counted and replayed: what is queued, what failed and why, and running it again.
extension DataPoint {
    /// The operations that `query` selects, oldest first, one page; the next page starts at
    /// ``OperationPage/next``.
    ///
    /// It lists what the DataPoint knows: every unfinished operation, and finished ones within their retention (see
    /// ``Configuration/retention``). It reads every known operation under the pipeline's lock, so it suits a tool or
    /// a dashboard, not a hot path. On a store that several processes share, it lists what this process holds, such as
    /// what it runs, and not what ran elsewhere; the store may list the whole fleet's (PostgreSQL's
    /// `PostgresFleetStorage.operations(_:of:deadline:)`).
    ///
    /// ```swift
    /// let failed = try point.operations(OperationQuery(states: [.failed], sequence: "webhooks"))
    /// ```
    ///
    /// - Parameter query: The states, sequence and kind to list, and the page.
    /// - Returns: The page.
    /// - Throws: ``RelayError`` with ``RelayError/Code/invalidArgument`` when the limit is below 1.
    public nonisolated func operations(_ query: OperationQuery = OperationQuery()) throws -> OperationPage {
        guard query.limit >= 1 else {
            throw RelayError(.invalidArgument, "a page holds at least one operation; the limit was \(query.limit)")
        }
        let now = core.clock.now
        return core.read { $0.operations(query, now: now) }
    }

    /// How many known operations are in each state, of one sequence and one kind when given; states with none are
    /// left out.
    ///
    /// On a store that several processes share, it counts what this process knows; the store may count the whole
    /// fleet's (PostgreSQL's `PostgresFleetStorage.operationCounts(of:sequence:deadline:)`).
    ///
    /// - Parameters:
    ///   - sequence: The sequence, or `nil` for all.
    ///   - kind: The kind, or `nil` for all.
    /// - Returns: The counts by state.
    public nonisolated func operationCounts(
        sequence: CallSequence.Name? = nil, kind: CallKind? = nil
    ) -> [OperationQuery.State: Int] {
        core.read { $0.counts(sequence: sequence, kind: kind) }
    }

    /// Enqueues a failed or cancelled operation again, as a new operation with the same kind, sequence, payload,
    /// metadata, retry policy and idempotency key, and no dependencies; the original keeps its terminal state.
    ///
    /// ```swift
    /// for status in try point.operations(OperationQuery(states: [.failed])).statuses {
    ///     try await point.replay(status.id)
    /// }
    /// ```
    ///
    /// On a shared store, an operation that another process enqueued or ran is replayed as well: the store has it.
    ///
    /// - Parameter id: The failed or cancelled operation.
    /// - Returns: The handle of the new operation.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownOperation`` when no operation has this id (or it was
    ///   forgotten after its retention), ``RelayError/Code/notReplayable`` when it has not failed or been cancelled,
    ///   and the errors of ``enqueue(_:)-(CallOperation)``.
    @discardableResult
    public nonisolated func replay(_ id: UUID) async throws -> CallHandle {
        let now = core.clock.now
        let found = core.readWithDirectory { machine, directory -> (CallOperation, CallStatus)? in
            guard let operation = machine.operation(id, in: directory),
                let status = machine.status(of: id, in: directory, now: now)
            else { return nil }
            return (operation, status)
        }
        let original: CallOperation
        let state: OperationQuery.State
        if let (operation, status) = found {
            (original, state) = (operation, OperationQuery.State(status.state))
        } else if let stored = try await core.storedShared(id) {
            // A fleet's operation that this process does not hold: the shared store has it.
            original = stored.operation
            if let result = stored.result {
                state = OperationQuery.State(.finished(result))
            } else {
                state = try await core.status(of: id).map { OperationQuery.State($0.state) } ?? .pending
            }
        } else {
            throw RelayError(.unknownOperation, "no operation \(id) is known", operationIDs: [id])
        }
        guard state == .failed || state == .cancelled else {
            throw RelayError(
                .notReplayable,
                "operation \(id) is \(state.rawValue); only failed and cancelled operations are replayed",
                operationIDs: [id])
        }
        return try await enqueue(original.replayed())
    }

    /// Removes finished operations now, before their retention passes: their outcomes, and the dead letters among
    /// them, are gone from memory and, once the store folds its journal, from disk.
    ///
    /// ```swift
    /// let deadLetters = try point.operations(.deadLetters(limit: 500))
    /// try await point.purge(deadLetters.statuses.map(\.id))
    /// ```
    ///
    /// A live ``CallHandle`` keeps its outcome. Ids of operations already forgotten are passed over.
    ///
    /// - Parameter ids: The finished operations.
    /// - Returns: How many operations were purged.
    /// - Throws: ``RelayError`` with ``RelayError/Code/operationUnfinished`` when one has not finished, and then
    ///   nothing is purged; ``RelayError/Code/storageFailure`` when the purge cannot be recorded.
    @discardableResult
    public nonisolated func purge(_ ids: some Sequence<UUID>) async throws(RelayError) -> Int {
        try await core.purge(Array(ids))
    }

    /// Removes every finished operation that `query` selects, of the states it names that are terminal, now, before
    /// its retention passes (see ``purge(_:)-(Sequence<UUID>)``).
    ///
    /// ```swift
    /// try await point.purge(matching: OperationQuery(states: [.failed], sequence: "webhooks"))
    /// ```
    ///
    /// - Parameter query: The states, sequence and kind to purge, every terminal state when it names none; its page is
    ///   ignored.
    /// - Returns: How many operations were purged.
    /// - Throws: ``RelayError`` with ``RelayError/Code/storageFailure`` when the purge cannot be recorded.
    @discardableResult
    public nonisolated func purge(matching query: OperationQuery) async throws(RelayError) -> Int {
        var query = query
        let terminal = Set(OperationQuery.State.allCases.filter(\.isTerminal))
        query.states = query.states.isEmpty ? terminal : query.states.intersection(terminal)
        query.limit = .max
        query.after = nil
        guard !query.states.isEmpty else { return 0 }
        let now = core.clock.now
        let ids = core.read { $0.operations(query, now: now) }.statuses.map(\.id)
        return try await core.purge(ids)
    }
}
