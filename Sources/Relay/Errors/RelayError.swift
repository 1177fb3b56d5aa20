import Foundation

/// An error that Relay throws for bad input, misuse, or the end of a DataPoint's life.
///
/// Every rejection carries a ``Code`` you can match on, a message written for people, and the ids of the operations
/// involved. A rejected call changes nothing: no state, no storage, no events.
///
/// ```swift
/// do {
///     try await point.enqueue(operations)
/// } catch let error as RelayError where error.code == .dependencyCycle {
///     print("cycle through", error.operationIDs)
/// }
/// ```
public struct RelayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``RelayError``; new codes may be added without breaking the API.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case unknownSequence
            case invalidBunchSize
            case dependencyCycle
            case unknownDependency
            case conflictingOperation
            case unknownOperation
            case unknownKind
            case payloadTooLarge
            case invalidRetryPolicy
            case invalidArgument
            case operationFinished
            case operationFailed
            case operationCancelled
            case operationSkipped
            case notRunning
            case alreadyRunning
            case shutdown
            case sequenceAttached
            case storageFailure
            case corruptStore
            case unsupportedFormat
            case storeLocked
            case invalidURL
            case secretInCall
            case responseDecoding
            case unknownCollection
            case collectionConflict
            case modelEncoding
            case modelNotFound
            case typeMismatch
            case operationEncoding
            case notReplayable
            case operationUnfinished
            case deadlineExceeded
            case overloaded
        }

        private let value: Value

        private init(_ value: Value) {
            self.value = value
        }

        /// The operation names a sequence that the DataPoint does not have.
        public static let unknownSequence = Code(.unknownSequence)
        /// A bunch size below 1 was given.
        public static let invalidBunchSize = Code(.invalidBunchSize)
        /// The dependencies form a cycle, possibly a self-dependency; ``RelayError/operationIDs`` lists the cycle.
        public static let dependencyCycle = Code(.dependencyCycle)
        /// A dependency names an id that is neither known nor part of the same commit.
        public static let unknownDependency = Code(.unknownDependency)
        /// An id that is already known was enqueued again with different content.
        public static let conflictingOperation = Code(.conflictingOperation)
        /// No operation with this id is known (never enqueued, or forgotten after its retention window).
        public static let unknownOperation = Code(.unknownOperation)
        /// No executor is registered for the operation's kind.
        public static let unknownKind = Code(.unknownKind)
        /// The payload is larger than ``DataPoint/Configuration/maximumPayloadSize``.
        public static let payloadTooLarge = Code(.payloadTooLarge)
        /// The retry policy cannot be applied (for example fewer than one attempt, or a negative delay).
        public static let invalidRetryPolicy = Code(.invalidRetryPolicy)
        /// An argument is outside its documented range.
        public static let invalidArgument = Code(.invalidArgument)
        /// The operation already reached a terminal state, so the request cannot apply.
        public static let operationFinished = Code(.operationFinished)
        /// The operation finished `failed`; thrown by ``CallHandle/value``.
        public static let operationFailed = Code(.operationFailed)
        /// The operation finished `cancelled`; thrown by ``CallHandle/value``.
        public static let operationCancelled = Code(.operationCancelled)
        /// The operation finished `skipped`, so it has no result; thrown by ``CallHandle/value``.
        public static let operationSkipped = Code(.operationSkipped)
        /// ``DataPoint/execute(_:deadline:)-(CallOperation,_)`` waited for the DataPoint to run, and its task was
        /// cancelled first.
        public static let notRunning = Code(.notRunning)
        /// ``DataPoint/run()`` was called while the DataPoint is already running.
        public static let alreadyRunning = Code(.alreadyRunning)
        /// The DataPoint has shut down; the operation stays stored but this process no longer runs it.
        public static let shutdown = Code(.shutdown)
        /// The ``CallSequence`` already belongs to another DataPoint.
        public static let sequenceAttached = Code(.sequenceAttached)
        /// The storage could not record a transition.
        public static let storageFailure = Code(.storageFailure)
        /// A store file is damaged somewhere other than its last record; ``RelayError/offset`` says where.
        public static let corruptStore = Code(.corruptStore)
        /// A store file was written by a newer format version than this build reads.
        public static let unsupportedFormat = Code(.unsupportedFormat)
        /// Another DataPoint, in this process or another, holds the store's folder.
        public static let storeLocked = Code(.storeLocked)
        /// An HTTP call's URL is not an absolute `http` or `https` URL with a host.
        public static let invalidURL = Code(.invalidURL)
        /// An HTTP call carries a credential header, which would be stored; supply it with a ``RequestAuthorizer``.
        public static let secretInCall = Code(.secretInCall)
        /// A response body does not decode as the requested type, or a stored response is damaged.
        public static let responseDecoding = Code(.responseDecoding)

        /// A model type is not registered with the DataPoint, or a collection is read as a type it does not hold.
        public static let unknownCollection = Code(.unknownCollection)
        /// A model type or a collection name is registered already, to another collection or type.
        public static let collectionConflict = Code(.collectionConflict)
        /// A model does not encode, or a stored one does not decode as its collection's type.
        public static let modelEncoding = Code(.modelEncoding)
        /// An alias refers to a model that is not in the document.
        public static let modelNotFound = Code(.modelNotFound)
        /// An alias's collection holds another type than the one it is read as, or an operation is of another kind
        /// than the typed operation it is read as.
        public static let typeMismatch = Code(.typeMismatch)
        /// A typed operation's input or output does not encode to JSON, or does not decode as its type.
        public static let operationEncoding = Code(.operationEncoding)
        /// Only a failed or cancelled operation can be replayed.
        public static let notReplayable = Code(.notReplayable)
        /// Only a finished operation can be purged; cancel it first.
        public static let operationUnfinished = Code(.operationUnfinished)
        /// An operation did not finish within the deadline that ``DataPoint/execute(_:deadline:)-(CallOperation,_)``
        /// waited for it, and it was cancelled; or a handle awaited with a timeout (``CallHandle/value(timeout:)``) saw
        /// none of it, and the operation goes on.
        public static let deadlineExceeded = Code(.deadlineExceeded)
        /// The DataPoint holds as many unfinished operations, or payload bytes of them, as its configuration allows.
        ///
        /// The limits are ``DataPoint/Configuration/maximumPending`` and
        /// ``DataPoint/Configuration/maximumPendingBytes``; the commit changed nothing, and the message says which
        /// limit is full.
        public static let overloaded = Code(.overloaded)

        /// The code's name, for example `dependencyCycle`.
        public var description: String { value.rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// A sentence for people; it never contains payloads or secrets.
    public let message: String
    /// The operations involved, for example every member of a cycle, in cycle order.
    public let operationIDs: [UUID]
    /// For ``Code/corruptStore``, the byte offset of the damaged record in its file.
    public let offset: Int?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: What went wrong.
    ///   - message: A sentence for people.
    ///   - operationIDs: The operations involved.
    ///   - offset: Where in a store file the damage is.
    public init(_ code: Code, _ message: String, operationIDs: [UUID] = [], offset: Int? = nil) {
        self.code = code
        self.message = message
        self.operationIDs = operationIDs
        self.offset = offset
    }

    /// The code followed by the message.
    public var description: String { "RelayError.\(code): \(message)" }
}
