import Foundation

/// What a transaction changes: models upserted and removed, and operations enqueued, committed as one atomic,
/// durable commit by ``DataPoint/transaction(isolation:_:)``.
///
/// Models are encoded as they are staged, so a model that does not encode fails the call that stages it, before
/// anything is committed.
public struct Transaction: Sendable {
    private let collections: [ObjectIdentifier: String]
    private let maximumSize: Int
    private(set) var changes: [ModelChange] = []
    private(set) var operations: [CallOperation] = []
    /// When operations staged with a start time may start: at a date, or after a delay from the commit.
    private(set) var startTimes: [UUID: StartTime] = [:]

    enum StartTime: Sendable {
        case date(Date)
        case delay(Duration)
    }
    /// Models to erase, with what their erasure cascades to, once the staged changes apply.
    private(set) var erasures: [Alias] = []

    init(collections: [ObjectIdentifier: String], maximumSize: Int) {
        self.collections = collections
        self.maximumSize = maximumSize
    }

    /// Stages a model, inserted or replacing the one with its id.
    ///
    /// - Parameter model: The model; its type must be registered.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` for a type that is not registered,
    ///   ``RelayError/Code/modelEncoding`` when it does not encode, ``RelayError/Code/payloadTooLarge`` when its
    ///   encoded form is larger than ``DataPoint/Configuration/maximumPayloadSize``.
    public mutating func upsert<M: Model>(_ model: M) throws {
        let collection = try collection(of: M.self)
        let id = model.documentKey
        let encoded = try encode(model, describing: "a \(M.typeName) of id \(id)")
        changes.append(ModelChange(collection: collection, id: id, encoded: encoded))
    }

    /// Whether a type is registered as `collection`.
    func holds(_ collection: String) -> Bool {
        collections.values.contains(collection)
    }

    /// Stages an encoded model under `id` in `collection`, as a call whose response is kept as a model does.
    ///
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` when no type is registered as the
    ///   collection, ``RelayError/Code/payloadTooLarge`` when `encoded` is larger than
    ///   ``DataPoint/Configuration/maximumPayloadSize``.
    mutating func upsert(encoded: Data, id: String, in collection: String) throws(RelayError) {
        guard holds(collection) else {
            throw RelayError(.unknownCollection, "no type is registered as the collection \(collection)")
        }
        guard encoded.count <= maximumSize else {
            throw RelayError(
                .payloadTooLarge,
                "the model \(id) of \(collection) is \(encoded.count) bytes; the limit is \(maximumSize)")
        }
        changes.append(ModelChange(collection: collection, id: id, encoded: encoded))
    }

    /// Stages the removal of a model, and of every relation that names it; removing one that is not there changes
    /// nothing.
    ///
    /// What it owns stays: ``erase(_:)`` takes that too.
    ///
    /// - Parameter model: The model; its type must be registered.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` for a type that is not registered.
    public mutating func remove<M: Model>(_ model: M) throws {
        try remove(M.self, id: model.id)
    }

    /// Stages the removal of the model of type `type` with id `id`, as ``remove(_:)`` does.
    ///
    /// - Parameters:
    ///   - type: The model's type; it must be registered.
    ///   - id: The model's id.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` for a type that is not registered.
    public mutating func remove<M: Model>(_ type: M.Type, id: M.ID) throws {
        changes.append(ModelChange(collection: try collection(of: type), id: M.documentKey(of: id), encoded: nil))
    }

    /// Stages a relation between two models (S23); setting one that is there changes nothing.
    ///
    /// Both models must be stored, or upserted earlier in the same transaction: the transaction is rejected
    /// otherwise, and nothing of it applies.
    ///
    /// - Parameters:
    ///   - model: The first model; its type must be registered.
    ///   - kind: How it relates to the second: it owns it, is owned by it, or is linked to it.
    ///   - other: The second model; its type must be registered.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` for a type that is not registered; the
    ///   transaction throws ``RelayError/Code/modelNotFound`` when it commits if either model is not stored.
    public mutating func relate<A: Model, B: Model>(_ model: A, _ kind: Relationship, _ other: B) throws {
        changes.append(Relation(try alias(of: model), kind, try alias(of: other)).change(removing: false))
    }

    /// Stages the removal of a relation; removing one that is not there changes nothing.
    ///
    /// - Parameters:
    ///   - model: The first model.
    ///   - kind: The relation, as it was set.
    ///   - other: The second model.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` for a type that is not registered.
    public mutating func unrelate<A: Model, B: Model>(_ model: A, _ kind: Relationship, _ other: B) throws {
        changes.append(Relation(try alias(of: model), kind, try alias(of: other)).change(removing: true))
    }

    /// Stages the erasure of a model, and of what it owns, in the same commit.
    ///
    /// What it owns goes too, unless another living owner keeps it, through any depth; what owns it stays; free links
    /// have no effect; every relation that names an erased model goes (S23). The cascade is worked out when the
    /// transaction commits, after its other changes.
    ///
    /// - Parameter model: The model; its type must be registered.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` for a type that is not registered.
    public mutating func erase<M: Model>(_ model: M) throws {
        erasures.append(try alias(of: model))
    }

    /// Stages the erasure of the model of type `type` with id `id`, as ``erase(_:)`` does.
    ///
    /// - Parameters:
    ///   - type: The model's type; it must be registered.
    ///   - id: The model's id.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` for a type that is not registered.
    public mutating func erase<M: Model>(_ type: M.Type, id: M.ID) throws {
        erasures.append(Alias(collection: try collection(of: type), id: M.documentKey(of: id)))
    }

    /// Stages a small value under a key, in the document's key-values; it replaces the key's value.
    ///
    /// - Parameters:
    ///   - value: The value, stored in its JSON form.
    ///   - key: The key.
    /// - Throws: ``RelayError`` with ``RelayError/Code/modelEncoding`` when the value does not encode, or
    ///   ``RelayError/Code/payloadTooLarge`` when its encoded form is larger than
    ///   ``DataPoint/Configuration/maximumPayloadSize``.
    public mutating func setValue(_ value: some Encodable & Sendable, forKey key: String) throws {
        let encoded = try encode(value, describing: "the value for \(key)")
        changes.append(ModelChange(collection: Document.values, id: key, encoded: encoded))
    }

    /// Stages the removal of a key's value.
    ///
    /// - Parameter key: The key.
    public mutating func removeValue(forKey key: String) {
        changes.append(ModelChange(collection: Document.values, id: key, encoded: nil))
    }

    /// Stages an operation, enqueued by the same commit as the models.
    ///
    /// - Parameter operation: The operation, checked when the transaction commits as
    ///   ``DataPoint/enqueue(_:)-([CallOperation])`` checks it.
    public mutating func enqueue(_ operation: CallOperation) {
        operations.append(operation)
    }

    /// Stages an operation that may start at `date`, not before; see ``DataPoint/enqueue(_:at:)-([CallOperation],_)``.
    ///
    /// - Parameters:
    ///   - operation: The operation.
    ///   - date: When it may start.
    public mutating func enqueue(_ operation: CallOperation, at date: Date) {
        operations.append(operation)
        startTimes[operation.id] = .date(date)
    }

    /// Stages an operation that may start `delay` after the transaction commits, not before.
    ///
    /// - Parameters:
    ///   - operation: The operation.
    ///   - delay: How long after the commit it waits before it may start.
    public mutating func enqueue(_ operation: CallOperation, after delay: Duration) {
        operations.append(operation)
        startTimes[operation.id] = .delay(delay)
    }

    /// Stages operations, in call order.
    ///
    /// - Parameter operations: The operations.
    public mutating func enqueue(_ operations: [CallOperation]) {
        self.operations += operations
    }

    /// The JSON form of a model or value (see ``ModelEncoder``), within the size limit; `what` names it in an error,
    /// built only then.
    private func encode(
        _ value: some Encodable, describing what: @autoclosure () -> String
    ) throws(RelayError) -> Data {
        let encoded: Data
        do {
            encoded = try ModelEncoder.encode(value)
        } catch {
            throw RelayError(.modelEncoding, "\(what()) does not encode: \(error)")
        }
        guard encoded.count <= maximumSize else {
            throw RelayError(
                .payloadTooLarge, "\(what()) encodes to \(encoded.count) bytes; the limit is \(maximumSize)")
        }
        return encoded
    }

    private func alias<M: Model>(of model: M) throws(RelayError) -> Alias {
        Alias(collection: try collection(of: M.self), id: model.documentKey)
    }

    private func collection<M: Model>(of type: M.Type) throws(RelayError) -> String {
        guard let collection = collections[ObjectIdentifier(M.self)] else {
            throw RelayError(.unknownCollection, "\(M.typeName) is not registered; register it with a collection first")
        }
        return collection
    }
}
