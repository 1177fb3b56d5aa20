import Foundation

/// A value a DataPoint keeps in a collection of its document, saved in the same atomic commits as the operations that
/// follow from it.
///
/// Register each model type once, under a collection name, then change models in transactions and read them at once:
///
/// ```swift
/// struct Order: Model {
///     let id: UUID
///     var total: Int
/// }
///
/// try point.register(Order.self, as: "orders")
/// try await point.transaction { tx in
///     try tx.upsert(Order(id: orderID, total: 42))
///     tx.enqueue(try CallOperation.http(HTTPCall(method: .post, url: webhook)))
/// }
/// let order = try point.model(Order.self, id: orderID)
/// ```
///
/// A model is stored in its JSON form, under its id as `String(describing:)` writes it.
public protocol Model: Codable, Sendable, Identifiable where ID: Sendable {}

extension Model {
    /// The id as the document keys it: as `String(describing:)` writes it, without its search for a conformance for
    /// the common id types.
    var documentKey: String { Self.documentKey(of: id) }

    /// An id as the document keys it.
    static func documentKey(of id: ID) -> String {
        switch id {
        case let id as String: id
        case let id as Int: String(id)
        case let id as UUID: id.uuidString
        default: String(describing: id)
        }
    }

    /// The type's name as registrations record it.
    static var typeName: String { String(reflecting: Self.self) }
}
