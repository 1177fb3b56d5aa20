import Foundation

/// The document: typed collections of models, changed in transactions together with the operations that follow from
/// them (S19, S20).
extension DataPoint {
    /// Registers a model type under a collection name, once per DataPoint.
    ///
    /// A reopened store keeps its models by collection name; registering the type again binds them to it.
    ///
    /// - Parameters:
    ///   - type: The model type.
    ///   - collection: The collection's name.
    /// - Throws: ``RelayError`` with ``RelayError/Code/collectionConflict`` when the type is registered already, or
    ///   the name holds another type.
    public nonisolated func register<M: Model>(_ type: M.Type, as collection: String) throws {
        try core.changeDocument { (document) throws(RelayError) in
            try document.register(M.self, as: collection)
        }
    }

    /// The model with this id, or `nil` when there is none.
    ///
    /// Reads are synchronous and see whole transactions only.
    ///
    /// - Parameters:
    ///   - type: The model type; it must be registered.
    ///   - id: The model's id.
    /// - Returns: The model.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` for a type that is not registered, or
    ///   ``RelayError/Code/modelEncoding`` when the stored model does not decode as `M`.
    public nonisolated func model<M: Model>(_ type: M.Type, id: M.ID) throws -> M? {
        do throws(RelayError) {
            return try model(type, key: M.documentKey(of: id))
        } catch {
            guard error.code == .modelNotFound else { throw error }
            return nil
        }
    }

    /// The model under a document key; decoded once, then read from the document's decoded copies while it does not
    /// change.
    ///
    /// It throws ``RelayError/Code/modelNotFound`` rather than return an optional: resolving an alias is a hot path,
    /// and an optional of a generic type costs unspecialized code a metadata lookup.
    nonisolated func model<M: Model>(_ type: M.Type, key: String) throws(RelayError) -> M {
        let lookup = try core.readDocument { (document) throws(RelayError) -> Document.Lookup in
            document.lookup(Alias(collection: try document.collection(of: M.self), id: key))
        }
        if let kept = lookup.kept as? Decoded<M> { return kept.value }
        guard let found = lookup.found else {
            throw RelayError(.modelNotFound, "no \(M.typeName) of id \(key) is in the document")
        }
        let model = try Self.decodeModel(M.self, from: found.encoded, id: key)
        core.changeDocument { $0.keepDecoded(model, of: found.alias, from: found.encoded) }
        return model
    }

    /// Every model of a collection, in id order.
    ///
    /// - Parameter type: The model type; it must be registered.
    /// - Returns: The models.
    /// - Throws: The errors of ``model(_:id:)``.
    public nonisolated func models<M: Model>(_ type: M.Type) throws -> [M] {
        try models(type) { _ in true }
    }

    /// The models of a collection that `isIncluded` accepts, in id order.
    ///
    /// - Parameters:
    ///   - type: The model type; it must be registered.
    ///   - isIncluded: Whether to include a model; it runs outside every lock.
    /// - Returns: The models.
    /// - Throws: The errors of ``model(_:id:)``, and what `isIncluded` throws.
    public nonisolated func models<M: Model>(_ type: M.Type, where isIncluded: (M) throws -> Bool) throws -> [M] {
        let all = try core.readDocument { (document) throws(RelayError) in
            document.models(in: try document.collection(of: M.self))
        }
        return try all.sorted { $0.key < $1.key }.compactMap { key, encoded in
            let model = try Self.decodeModel(M.self, from: encoded, id: key)
            return try isIncluded(model) ? model : nil
        }
    }

    /// The value stored under a key by a transaction's ``Transaction/setValue(_:forKey:)``, or `nil` when there is
    /// none.
    ///
    /// - Parameters:
    ///   - type: The value's type.
    ///   - key: The key.
    /// - Returns: The value.
    /// - Throws: ``RelayError`` with ``RelayError/Code/modelEncoding`` when the stored value does not decode as `type`.
    public nonisolated func value<V: Decodable>(_ type: V.Type, forKey key: String) throws -> V? {
        guard let encoded = core.readDocument({ $0.value(forKey: key) }) else { return nil }
        do {
            return try JSONDecoder().decode(V.self, from: encoded)
        } catch {
            throw RelayError(.modelEncoding, "the value for \(key) does not decode as \(V.self): \(error)")
        }
    }

    /// How many models a collection holds.
    ///
    /// - Parameter type: The model type; it must be registered.
    /// - Returns: The count.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` for a type that is not registered.
    public nonisolated func count<M: Model>(of type: M.Type) throws -> Int {
        try core.readDocument { (document) throws(RelayError) in
            document.count(in: try document.collection(of: M.self))
        }
    }

    /// The changes committed transactions make to a collection from now on: one ``CallEvent/Kind/modelChanged(_:)``
    /// per model upserted or removed, delivered once the transaction is durable, in a stream of its own with a bounded
    /// buffer (see ``events(bufferSize:)``, whose sequence numbers it shares).
    ///
    /// ```swift
    /// let changes = try point.changes(of: Order.self)
    /// for await event in changes {
    ///     if let change = event.kind.change, let order = try change.model(as: Order.self) {
    ///         print(order)
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - type: The model type; it must be registered.
    ///   - bufferSize: How many changes to buffer before dropping the oldest; the configuration's by default.
    /// - Returns: The changes; the stream ends when the DataPoint begins to shut down.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` for a type that is not registered.
    public nonisolated func changes<M: Model>(of type: M.Type, bufferSize: Int? = nil) throws -> CallEventStream {
        let collection = try core.readDocument { (document) throws(RelayError) in
            try document.collection(of: M.self)
        }
        return changes(in: collection, bufferSize: bufferSize)
    }

    /// The changes committed transactions make to one collection, or to every collection and the key-values when it
    /// is `nil`, from now on; see ``changes(of:bufferSize:)``.
    ///
    /// - Parameters:
    ///   - collection: The collection's name, or `nil` for all.
    ///   - bufferSize: How many changes to buffer before dropping the oldest; the configuration's by default.
    /// - Returns: The changes; the stream ends when the DataPoint begins to shut down.
    public nonisolated func changes(in collection: String? = nil, bufferSize: Int? = nil) -> CallEventStream {
        core.subscribe(toCollection: collection, bufferSize: bufferSize ?? configuration.eventBufferSize)
    }

    /// Upserts and removes models and enqueues operations as one atomic commit with one snapshot number, durable under
    /// the store's policy before it returns.
    ///
    /// Everything is checked before anything applies: a model that does not encode, a type that is not registered, an
    /// operation that ``enqueue(_:)-([CallOperation])`` would reject. A rejected transaction changes nothing, models
    /// included; one that only enqueues behaves exactly like `enqueue`.
    ///
    /// ```swift
    /// let handles = try await point.transaction { tx in
    ///     try tx.upsert(order)
    ///     tx.enqueue(try CallOperation.http(HTTPCall(method: .post, url: webhook, body: .data(payload))))
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - isolation: The caller's isolation, where `body` runs; inferred.
    ///   - body: Stages the changes; it runs before any lock is taken.
    /// - Returns: The handles of the enqueued operations, in staging order.
    /// - Throws: What `body` throws, and the errors of ``enqueue(_:)-([CallOperation])``.
    @discardableResult
    public func transaction(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (inout Transaction) throws -> Void
    ) async throws -> [CallHandle] {
        var transaction = core.newTransaction()
        try body(&transaction)
        let now = core.clock.now
        let records = try await core.enqueue(
            transaction.operations, changes: transaction.changes, erasures: transaction.erasures,
            startTimes: transaction.startTimes.mapValues { start in
                switch start {
                case .date(let date): core.clock.time(of: date)
                case .delay(let delay): now + delay.relayNanoseconds
                }
            })
        return records.map { CallHandle(record: $0, core: core) }
    }

    static func decodeModel<M: Model>(_ type: M.Type, from encoded: Data, id: String) throws(RelayError) -> M {
        do {
            return try JSONDecoder().decode(M.self, from: encoded)
        } catch {
            throw RelayError(.modelEncoding, "the stored \(M.typeName) of id \(id) does not decode: \(error)")
        }
    }
}
