import Foundation

/// The binary form of records and snapshots in a file store.
///
/// Hand-written rather than `Codable`: the journal is on the acknowledgement path of every transition, and a
/// compact, field-by-field encoding is several times faster to write and read than JSON.
enum RecordCodec {
    fileprivate enum Tag: UInt8 {
        case commit = 1
        case started
        case retryScheduled
        case interrupted
        case finished
        case held
        case sequenceConfigured
        case suspensionChanged
        case attemptReturned
        case models
        case purged
        /// A retry scheduled after a failure that the record keeps, from version 6.
        case retryScheduledAfterFailure
        /// An attempt given back after it sent its request, which got no answer, from version 7.
        case attemptReturnedAfterSending
        /// A terminal state with how long the attempts ran, from version 7.
        case finishedAfterRunning
        /// A terminal state with the changes its completion commits on a shared store (``StorageRecord/encoded()``):
        /// a file store never writes it, since it keeps such changes in a `models` record.
        case finishedWithChanges
    }

    // MARK: - Records

    static func encode(_ record: StorageRecord, into writer: inout ByteWriter) {
        switch record.change {
        case .commit(let snapshot, let operations, let date):
            writer.byte(Tag.commit.rawValue)
            writer.varint(snapshot)
            writer.date(date)
            writer.varint(UInt64(operations.count))
            for operation in operations { encode(operation, into: &writer) }
        case .started(let id, let attempt, let date):
            writer.byte(Tag.started.rawValue)
            writer.uuid(id)
            writer.int(attempt)
            writer.date(date)
        case .retryScheduled(let id, let attempt, let date, let failure):
            writer.byte((failure == nil ? Tag.retryScheduled : Tag.retryScheduledAfterFailure).rawValue)
            writer.uuid(id)
            writer.int(attempt)
            writer.date(date)
            if let failure { encode(.failed(failure), into: &writer) }
        case .interrupted(let id, let date):
            writer.byte(Tag.interrupted.rawValue)
            writer.uuid(id)
            writer.date(date)
        case .attemptReturned(let id, let attempts, let sent):
            writer.byte(sent ? Tag.attemptReturnedAfterSending.rawValue : Tag.attemptReturned.rawValue)
            writer.uuid(id)
            writer.int(attempts)
        case .finished(let id, let result, let date, let ran, let changes):
            let tag: Tag = !changes.isEmpty ? .finishedWithChanges : ran > 0 ? .finishedAfterRunning : .finished
            writer.byte(tag.rawValue)
            writer.uuid(id)
            encode(result, into: &writer)
            writer.date(date)
            if tag != .finished { writer.varint(UInt64(ran)) }
            if tag == .finishedWithChanges { encode(changes, into: &writer) }
        case .held(let id, let until, let context):
            writer.byte(Tag.held.rawValue)
            writer.uuid(id)
            writer.optional(until) { $0.date($1) }
            writer.optional(context) { $0.string($1) }
        case .sequenceConfigured(let name, let bunchSize, let algorithm):
            writer.byte(Tag.sequenceConfigured.rawValue)
            writer.string(name.rawValue)
            writer.int(bunchSize)
            writer.string(algorithm.rawValue)
        case .models(let snapshot, let changes, let date):
            writer.byte(Tag.models.rawValue)
            encodeModels(snapshot: snapshot, changes: changes, date: date, into: &writer)
        case .suspensionChanged(let name, let count):
            writer.byte(Tag.suspensionChanged.rawValue)
            writer.optional(name) { $0.string($1.rawValue) }
            writer.int(count)
        case .purged(let ids, let date):
            writer.byte(Tag.purged.rawValue)
            writer.date(date)
            writer.varint(UInt64(ids.count))
            for id in ids { writer.uuid(id) }
        }
    }

    static func decodeRecord(from reader: inout ByteReader) throws(ByteReader.Malformed) -> StorageRecord {
        guard let tag = Tag(rawValue: try reader.byte()) else { throw ByteReader.Malformed() }
        switch tag {
        case .commit:
            let snapshot = try reader.snapshotNumber()
            let date = try reader.date()
            let count = try reader.count()
            var operations: [CallOperation] = []
            operations.reserveCapacity(count)
            for _ in 0..<count { operations.append(try decodeOperation(from: &reader)) }
            return .commit(snapshot: snapshot, operations: operations, at: date)
        case .started:
            return .started(try reader.uuid(), attempt: try reader.counter(), at: try reader.date())
        case .retryScheduled:
            return .retryScheduled(
                try reader.uuid(), attempt: try reader.counter(), at: try reader.date(), failure: nil)
        case .retryScheduledAfterFailure:
            return .retryScheduled(
                try reader.uuid(), attempt: try reader.counter(), at: try reader.date(),
                failure: try decodeFailure(from: &reader))
        case .interrupted:
            return .interrupted(try reader.uuid(), at: try reader.date())
        case .attemptReturned:
            return .attemptReturned(try reader.uuid(), attempts: try reader.counter(), sent: false)
        case .attemptReturnedAfterSending:
            return .attemptReturned(try reader.uuid(), attempts: try reader.counter(), sent: true)
        case .finished:
            return .finished(try reader.uuid(), try decodeResult(from: &reader), at: try reader.date(), ran: 0)
        case .finishedAfterRunning:
            return .finished(
                try reader.uuid(), try decodeResult(from: &reader), at: try reader.date(),
                ran: Int64(clamping: try reader.varint()))
        case .finishedWithChanges:
            return .finished(
                try reader.uuid(), try decodeResult(from: &reader), at: try reader.date(),
                ran: Int64(clamping: try reader.varint()), changes: try decodeChanges(from: &reader))
        case .held:
            let id = try reader.uuid()
            let until = try reader.optional { (reader) throws(ByteReader.Malformed) in try reader.date() }
            let context = try reader.optional { (reader) throws(ByteReader.Malformed) in try reader.string() }
            return .held(id, until: until, context: context)
        case .sequenceConfigured:
            let name = CallSequence.Name(rawValue: try reader.string())
            let bunchSize = try reader.int()
            guard let algorithm = CallSequence.Algorithm(rawValue: try reader.string()) else {
                throw ByteReader.Malformed()
            }
            return .sequenceConfigured(name, bunchSize: bunchSize, algorithm: algorithm)
        case .suspensionChanged:
            let name = try reader.optional { (reader) throws(ByteReader.Malformed) in
                CallSequence.Name(rawValue: try reader.string())
            }
            return .suspensionChanged(name, count: try reader.counter())
        case .models:
            return try decodeModels(from: &reader)
        case .purged:
            let date = try reader.date()
            let count = try reader.count()
            var ids: [UUID] = []
            ids.reserveCapacity(count)
            for _ in 0..<count { ids.append(try reader.uuid()) }
            return .purged(ids, at: date)
        }
    }

    // MARK: - Operations and results

    static func encode(_ operation: CallOperation, into writer: inout ByteWriter) {
        writer.uuid(operation.id)
        writer.string(operation.kind.rawValue)
        writer.string(operation.sequenceName.rawValue)
        writer.varint(UInt64(operation.dependencies.count))
        for dependency in operation.dependencies { writer.uuid(dependency) }
        writer.int(operation.priority)
        writer.blob(operation.payload)
        writer.varint(UInt64(operation.persistentUserInfo.count))
        for (key, value) in operation.persistentUserInfo.sorted(by: { $0.key < $1.key }) {
            writer.string(key)
            writer.string(value)
        }
        let policy = operation.retryPolicy
        writer.int(policy.maximumAttempts)
        writer.duration(policy.initialDelay)
        writer.double(policy.multiplier)
        writer.duration(policy.maximumDelay)
        writer.optional(policy.maximumElapsed) { $0.duration($1) }
        writer.string(policy.jitter.rawValue)
        writer.string(operation.onDependencyFailure.rawValue)
        writer.optional(operation.snapshot) { $0.varint($1) }
        writer.optional(operation.explicitIdempotencyKey) { $0.string($1) }
    }

    static func decodeOperation(from reader: inout ByteReader) throws(ByteReader.Malformed) -> CallOperation {
        let id = try reader.uuid()
        let kind = CallKind(rawValue: try reader.string())
        let sequenceName = CallSequence.Name(rawValue: try reader.string())
        let dependencyCount = try reader.count()
        var dependencies = Set<UUID>(minimumCapacity: dependencyCount)
        for _ in 0..<dependencyCount { dependencies.insert(try reader.uuid()) }
        let priority = try reader.int()
        let payload = try reader.blob()
        var userInfo: [String: String] = [:]
        for _ in 0..<(try reader.count()) { userInfo[try reader.string()] = try reader.string() }
        let maximumAttempts = try reader.int()
        let initialDelay = try reader.duration()
        let multiplier = try reader.double()
        let maximumDelay = try reader.duration()
        let maximumElapsed = try reader.optional { (reader) throws(ByteReader.Malformed) in try reader.duration() }
        guard let jitter = RetryPolicy.Jitter(rawValue: try reader.string()),
            let onFailure = CallOperation.DependencyFailurePolicy(rawValue: try reader.string())
        else { throw ByteReader.Malformed() }
        let snapshot = try reader.optional { (reader) throws(ByteReader.Malformed) in try reader.snapshotNumber() }
        let key = try reader.optional { (reader) throws(ByteReader.Malformed) in try reader.string() }
        let policy = RetryPolicy(
            maximumAttempts: maximumAttempts,
            initialDelay: initialDelay,
            multiplier: multiplier,
            maximumDelay: maximumDelay,
            maximumElapsed: maximumElapsed,
            jitter: jitter
        )
        // Enqueue refuses such a policy, so a stored one is damage.
        guard policy.validationFailure == nil else { throw ByteReader.Malformed() }
        var operation = CallOperation(
            id: id,
            kind: kind,
            sequenceName: sequenceName,
            dependencies: dependencies,
            priority: priority,
            payload: payload,
            persistentUserInfo: userInfo,
            retryPolicy: policy,
            onDependencyFailure: onFailure,
            idempotencyKey: key
        )
        operation.snapshot = snapshot
        return operation
    }

    static func encode(_ result: CallResult, into writer: inout ByteWriter) {
        switch result {
        case .completed(let data):
            writer.byte(0)
            writer.blob(data)
        case .skipped:
            writer.byte(1)
        case .failed(let failure):
            writer.byte(7)
            writer.string(failure.reason)
            writer.int(failure.attempts)
            writer.string(failure.cause.name)
            writer.byte(failure.response == nil ? 0 : 1)
            if let response = failure.response { writer.blob(response.encoded) }
        case .cancelled(.requested):
            writer.byte(3)
        case .cancelled(.dependencyFailed(let id)):
            writer.byte(4)
            writer.uuid(id)
        case .cancelled(.dependencyCancelled(let id)):
            writer.byte(5)
            writer.uuid(id)
        }
    }

    static func decodeResult(from reader: inout ByteReader) throws(ByteReader.Malformed) -> CallResult {
        switch try reader.byte() {
        case 0: .completed(try reader.blob())
        case 1: .skipped
        case 2: .failed(CallFailure(reason: try reader.string(), attempts: try reader.counter(), cause: .unrecorded))
        case 3: .cancelled(.requested)
        case 4: .cancelled(.dependencyFailed(try reader.uuid()))
        case 5: .cancelled(.dependencyCancelled(try reader.uuid()))
        case 6:
            .failed(
                CallFailure(
                    reason: try reader.string(), attempts: try reader.counter(), cause: .unrecorded,
                    response: try CallResponse(encoded: try reader.blob())))
        case 7:
            .failed(
                CallFailure(
                    reason: try reader.string(), attempts: try reader.counter(),
                    cause: CallFailure.Cause(stored: try reader.string()),
                    response: try reader.byte() == 0 ? nil : CallResponse(encoded: try reader.blob())))
        default: throw ByteReader.Malformed()
        }
    }

    /// A failure written as a failed result.
    static func decodeFailure(from reader: inout ByteReader) throws(ByteReader.Malformed) -> CallFailure {
        guard case .failed(let failure) = try decodeResult(from: &reader) else { throw ByteReader.Malformed() }
        return failure
    }
}
