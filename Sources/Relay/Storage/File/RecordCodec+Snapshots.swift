import Foundation

/// Snapshots: the state a store folds its journal into, sections after the operations as versions added them.
extension RecordCodec {
    static func encode(_ state: StoredState, into writer: inout ByteWriter) {
        writer.varint(state.lastSnapshot)
        writer.int(state.suspensionCount)
        writer.varint(UInt64(state.sequences.count))
        for sequence in state.sequences {
            writer.string(sequence.name.rawValue)
            writer.int(sequence.bunchSize)
            writer.string(sequence.algorithm.rawValue)
            writer.int(sequence.suspensionCount)
        }
        writer.varint(UInt64(state.operations.count))
        for entry in state.operations {
            encode(entry.operation, into: &writer)
            writer.int(entry.attempts)
            writer.date(entry.enqueuedAt)
            writer.optional(entry.firstStartedAt) { $0.date($1) }
            writer.optional(entry.result) { encode($1, into: &$0) }
            writer.optional(entry.finishedAt) { $0.date($1) }
            writer.optional(entry.retryAt) { $0.date($1) }
            writer.varint(UInt64(entry.holds.count))
            for (context, until) in entry.holds.sorted(by: { ($0.key ?? "") < ($1.key ?? "") }) {
                writer.optional(context) { $0.string($1) }
                writer.date(until)
            }
        }
        encode(state.models, into: &writer)
        let failures = state.operations.enumerated().compactMap { index, entry in
            entry.lastFailure.map { (index, $0) }
        }
        let unanswered = state.operations.enumerated().compactMap { index, entry in
            entry.unansweredSends > 0 ? (index, entry.unansweredSends) : nil
        }
        let runTimes = state.operations.enumerated().compactMap { index, entry in
            entry.runTime > .zero ? (index, entry.runTime.relayNanoseconds) : nil
        }
        // Each section is written only when it or a later one has entries, after the earlier ones, written then even
        // when they have none: a store of an earlier version ends where its sections end.
        guard !failures.isEmpty || !unanswered.isEmpty || !runTimes.isEmpty else { return }
        if state.models.isEmpty { writer.varint(0) }
        writer.varint(UInt64(failures.count))
        for (index, failure) in failures {
            writer.varint(UInt64(index))
            encode(.failed(failure), into: &writer)
        }
        guard !unanswered.isEmpty || !runTimes.isEmpty else { return }
        writer.varint(UInt64(unanswered.count))
        for (index, count) in unanswered {
            writer.varint(UInt64(index))
            writer.int(count)
        }
        guard !runTimes.isEmpty else { return }
        writer.varint(UInt64(runTimes.count))
        for (index, nanoseconds) in runTimes {
            writer.varint(UInt64(index))
            writer.varint(UInt64(nanoseconds))
        }
    }

    static func decodeState(from reader: inout ByteReader) throws(ByteReader.Malformed) -> StoredState {
        var state = StoredState(lastSnapshot: try reader.snapshotNumber(), suspensionCount: try reader.counter())
        for _ in 0..<(try reader.count()) {
            let name = CallSequence.Name(rawValue: try reader.string())
            let bunchSize = try reader.int()
            guard let algorithm = CallSequence.Algorithm(rawValue: try reader.string()) else {
                throw ByteReader.Malformed()
            }
            state.sequences.append(
                StoredSequence(
                    name: name, bunchSize: bunchSize, algorithm: algorithm, suspensionCount: try reader.counter())
            )
        }
        let count = try reader.count()
        state.operations.reserveCapacity(count)
        for _ in 0..<count {
            let operation = try decodeOperation(from: &reader)
            let attempts = try reader.counter()
            let enqueuedAt = try reader.date()
            let firstStartedAt = try reader.optional { (reader) throws(ByteReader.Malformed) in try reader.date() }
            let result = try reader.optional { (reader) throws(ByteReader.Malformed) in try decodeResult(from: &reader)
            }
            let finishedAt = try reader.optional { (reader) throws(ByteReader.Malformed) in try reader.date() }
            let retryAt = try reader.optional { (reader) throws(ByteReader.Malformed) in try reader.date() }
            var holds: [String?: Date] = [:]
            for _ in 0..<(try reader.count()) {
                let context = try reader.optional { (reader) throws(ByteReader.Malformed) in try reader.string() }
                holds[context] = try reader.date()
            }
            state.operations.append(
                StoredOperation(
                    operation: operation,
                    snapshot: operation.snapshot ?? 0,
                    attempts: attempts,
                    enqueuedAt: enqueuedAt,
                    firstStartedAt: firstStartedAt,
                    result: result,
                    finishedAt: finishedAt,
                    retryAt: retryAt,
                    holds: holds
                )
            )
        }
        // Models follow from version 5; an earlier snapshot ends here.
        if !reader.isAtEnd { state.models = try decodeCollections(from: &reader) }
        // Operations' last failures follow from version 6, by their place among the operations.
        if !reader.isAtEnd {
            for _ in 0..<(try reader.count()) {
                let index = try reader.varint()
                guard index < UInt64(state.operations.count) else { throw ByteReader.Malformed() }
                state.operations[Int(index)].lastFailure = try decodeFailure(from: &reader)
            }
        }
        // Operations' unanswered sends follow from version 7, by their place among the operations.
        if !reader.isAtEnd {
            for _ in 0..<(try reader.count()) {
                let index = try reader.varint()
                guard index < UInt64(state.operations.count) else { throw ByteReader.Malformed() }
                state.operations[Int(index)].unansweredSends = try reader.counter()
            }
        }
        // Finished operations' run times follow from version 7, by their place among the operations.
        if !reader.isAtEnd {
            for _ in 0..<(try reader.count()) {
                let index = try reader.varint()
                guard index < UInt64(state.operations.count) else { throw ByteReader.Malformed() }
                state.operations[Int(index)].runTime = .nanoseconds(Int64(clamping: try reader.varint()))
            }
        }
        return state
    }
}
