import Foundation

/// A reference to a model of any collection, by collection name and id; `Codable`, so that models can hold it.
///
/// ```swift
/// let alias = try point.alias(of: order)
/// let same = try point.resolve(alias, as: Order.self)
/// ```
public struct Alias: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The collection of the model it refers to.
    public let collection: String
    /// The model's id, as its description reads.
    public let id: String

    /// Creates an alias.
    ///
    /// - Parameters:
    ///   - collection: The collection.
    ///   - id: The model's id, as `String(describing:)` writes it.
    public init(collection: String, id: String) {
        self.collection = collection
        self.id = id
    }

    /// `orders/5F0E…`.
    public var description: String { "\(collection)/\(id)" }
}

/// A reference to a model of a known type, by id; `Codable`, so that models can hold it.
///
/// ```swift
/// struct Invoice: Model {
///     let id: UUID
///     let order: AliasOf<Order>
/// }
/// let order = try point.resolve(invoice.order)
/// ```
public struct AliasOf<M: Model>: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The model's id, as its description reads.
    public let id: String

    /// An alias of a model.
    ///
    /// - Parameter model: The model.
    public init(_ model: M) {
        id = model.documentKey
    }

    /// An alias of the model with this id.
    ///
    /// - Parameter id: The model's id.
    public init(id: M.ID) {
        self.id = M.documentKey(of: id)
    }

    /// The id.
    public var description: String { id }
}

extension DataPoint {
    /// An alias of a model, naming its type's collection.
    ///
    /// - Parameter model: The model; its type must be registered.
    /// - Returns: The alias.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownCollection`` for a type that is not registered.
    public nonisolated func alias<M: Model>(of model: M) throws -> Alias {
        let collection = try core.readDocument { (document) throws(RelayError) in
            try document.collection(of: M.self)
        }
        return Alias(collection: collection, id: model.documentKey)
    }

    /// The model an alias refers to.
    ///
    /// - Parameter alias: The alias.
    /// - Returns: The model.
    /// - Throws: ``RelayError`` with ``RelayError/Code/modelNotFound`` when there is no such model, and the errors of
    ///   ``model(_:id:)``.
    public nonisolated func resolve<M: Model>(_ alias: AliasOf<M>) throws -> M {
        try model(M.self, key: alias.id)
    }

    /// The model a type-erased alias refers to, as `type`.
    ///
    /// - Parameters:
    ///   - alias: The alias.
    ///   - type: The type the alias's collection holds.
    /// - Returns: The model.
    /// - Throws: ``RelayError`` with ``RelayError/Code/typeMismatch`` when the alias's collection holds another type,
    ///   ``RelayError/Code/modelNotFound`` when there is no such model, and the errors of ``model(_:id:)``.
    public nonisolated func resolve<M: Model>(_ alias: Alias, as type: M.Type) throws -> M {
        let collection = try core.readDocument { (document) throws(RelayError) in
            try document.collection(of: M.self)
        }
        guard collection == alias.collection else {
            throw RelayError(.typeMismatch, "\(alias) is in \(alias.collection), and \(M.typeName) is in \(collection)")
        }
        do throws(RelayError) {
            return try model(M.self, key: alias.id)
        } catch {
            guard error.code == .modelNotFound else { throw error }
            throw RelayError(.modelNotFound, "no model \(alias) is in the document")
        }
    }

    /// The model an alias refers to, or `nil` when there is none or it cannot be read.
    ///
    /// - Parameter alias: The alias.
    /// - Returns: The model.
    public nonisolated func resolveIfPresent<M: Model>(_ alias: AliasOf<M>) -> M? {
        try? resolve(alias)
    }

    /// The model a type-erased alias refers to, as `type`, or `nil` when there is none or it is of another type.
    ///
    /// - Parameters:
    ///   - alias: The alias.
    ///   - type: The type to read it as.
    /// - Returns: The model.
    public nonisolated func resolveIfPresent<M: Model>(_ alias: Alias, as type: M.Type) -> M? {
        try? resolve(alias, as: type)
    }
}
