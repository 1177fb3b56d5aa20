import Foundation

/// The commands that change operations and sequences, each one event whose value returns once it is acknowledged.
extension PipelineCore {
    /// Cancels an operation; on a shared store, one this DataPoint does not know is the store's to cancel.
    func cancel(_ id: UUID) async throws(RelayError) -> Bool {
        if let shared, readWithDirectory({ $0.lookup(id, in: $1) }) == nil {
            return try await callShared("cancel \(id)") { try await shared.cancel(id) }
        }
        return try await cancelHere(id)
    }

    /// Cancels an operation this DataPoint knows.
    func cancelHere(_ id: UUID) async throws(RelayError) -> Bool {
        try await commandWithDirectory { (machine, directory, actions, now) throws(RelayError) in
            try machine.cancel(id, in: directory, now: now, into: &actions)
        }
    }

    func purge(_ ids: [UUID]) async throws(RelayError) -> Int {
        // On a fleet the database holds every operation, and this process copies of those it ran.
        var purgedShared: Int?
        if let shared {
            purgedShared = try await callShared("purge \(ids.count) operations") { try await shared.purge(ids) }
        }
        let purged = try await commandWithDirectory { (machine, directory, actions, now) throws(RelayError) in
            try machine.purge(ids, in: directory, now: now, into: &actions)
        }
        return purgedShared ?? purged
    }

    func hold(_ id: UUID, until: Date?, context: String?) async throws(RelayError) {
        if let shared {
            // The store keeps every hold, so that one on an operation held here follows it back to the fleet.
            try await callShared("hold \(id)") { try await shared.hold(id, until: until, context: context) }
            guard readWithDirectory({ $0.lookup(id, in: $1) }) != nil else { return }
        }
        let deadline = until.map(clock.time(of:))
        try await commandWithDirectory { (machine, directory, actions, now) throws(RelayError) in
            try machine.hold(id, until: deadline, context: context, in: directory, now: now, into: &actions)
        }
    }

    func suspend(_ name: CallSequence.Name?, reason: String) async throws(RelayError) -> Int {
        if let shared { return try await changeSharedSuspensions(shared, of: name, by: 1, reason: reason) }
        return try await command { (machine, actions, now) throws(RelayError) in
            try machine.suspend(lane: name.map(machine.registeredLane), reason: reason, now: now, into: &actions)
        }
    }

    func resume(_ name: CallSequence.Name?, reason: String) async throws(RelayError) -> Int {
        if let shared { return try await changeSharedSuspensions(shared, of: name, by: -1, reason: reason) }
        return try await command { (machine, actions, now) throws(RelayError) in
            try machine.resume(lane: name.map(machine.registeredLane), reason: reason, now: now, into: &actions)
        }
    }

    func register(_ executor: any CallExecutor, for kind: CallKind) {
        let now = clock.now
        apply { $0.register(executor, for: kind, now: now, into: &$1) }
    }

    func upsertLane(
        _ name: CallSequence.Name,
        sequence: CallSequence,
        bunchSize: Int,
        algorithm: CallSequence.Algorithm,
        addingSuspensions: Int
    ) async throws(RelayError) {
        // On a shared store the suspensions gathered while detached go to the fleet's count, as later ones do.
        let local = shared == nil ? addingSuspensions : 0
        try await command { machine, actions, now in
            machine.upsertLane(
                name,
                sequence: sequence,
                bunchSize: bunchSize,
                algorithm: algorithm,
                addingSuspensions: local,
                now: now,
                into: &actions
            )
        }
        if let shared, addingSuspensions > 0 {
            _ = try await changeSharedSuspensions(
                shared, of: name, by: addingSuspensions, reason: "suspended before it was added")
        }
    }

    func adoptLane(_ name: CallSequence.Name, sequence: CallSequence) async throws(RelayError) {
        if read({ $0.sequenceConfiguration(name) == nil }) {
            try await configureShared(name, bunchSize: 1, algorithm: .flat, replacing: false)
        }
        try await command { machine, actions, _ in machine.adoptLane(name, sequence: sequence, into: &actions) }
    }

    /// Lets go of every lane's sequence actor, once the DataPoint that owns the pipeline is gone.
    func releaseSequences() {
        apply { machine, _ in machine.releaseSequences() }
    }

    func setBunchSize(_ size: Int, of name: CallSequence.Name) async throws(RelayError) {
        if shared != nil {
            let current = try read { (machine) throws(RelayError) in try machine.registeredConfiguration(name) }
            try await configureShared(name, bunchSize: size, algorithm: current.algorithm, replacing: true)
        }
        try await command { (machine, actions, now) throws(RelayError) in
            try machine.setBunchSize(size, lane: name, now: now, into: &actions)
        }
    }

    func setAlgorithm(_ algorithm: CallSequence.Algorithm, of name: CallSequence.Name) async throws(RelayError) {
        if shared != nil {
            let current = try read { (machine) throws(RelayError) in try machine.registeredConfiguration(name) }
            try await configureShared(name, bunchSize: current.bunchSize, algorithm: algorithm, replacing: true)
        }
        try await command { (machine, actions, now) throws(RelayError) in
            try machine.setAlgorithm(algorithm, lane: name, now: now, into: &actions)
        }
    }

    func restore(_ stored: StoredState) async throws(RelayError) {
        let clock = self.clock
        try await commandWithDirectory { machine, directory, actions, now in
            machine.document.restore(stored.models)
            machine.restore(stored, clock: clock, directory: &directory, now: now, into: &actions)
        }
    }
}
