import Relay
import ServiceLifecycle

/// A DataPoint as a ServiceLifecycle service: it runs the engine while the service group runs, and at graceful
/// shutdown stops starting operations, lets running ones finish until ``drainDeadline``, then cancels them.
///
/// ```swift
/// let point = try await DataPoint(storage: .file(at: folder))
/// let relay = RelayService(point)
/// let group = ServiceGroup(services: [relay, server], logger: logger)
/// try await group.run()
/// ```
///
/// A service group starts its services in order without waiting for any to be ready, and shuts them down in the
/// reverse order. A server that must not take requests before Relay runs awaits ``DataPoint/ready()`` first. A route
/// that streams Relay's events to a client should end its stream when its own service begins to shut down, so that
/// the server's drain never waits on it, whatever the order of the services:
///
/// ```swift
/// for await event in point.events(after: lastEventID).cancelOnGracefulShutdown() {
///     send(event)
/// }
/// ```
///
/// (Relay ends every event stream itself as soon as its own shutdown begins.)
public struct RelayService: Service {
    /// The DataPoint the service runs.
    public let point: DataPoint
    /// How long running operations may take once graceful shutdown begins; then they are cancelled, and stay stored.
    public let drainDeadline: Duration
    /// The bunch size the service gives the `data` sequence as it starts, unless `nil`.
    public let dataBunchSize: Int?

    /// Creates the service.
    ///
    /// ``DataPoint/execute(_:deadline:)-(CallOperation,_)`` runs its operations in the `data` sequence, whose
    /// default bunch size of 1 would serve a server's requests one at a time; the service raises it as it starts,
    /// so that the requests of a server run side by side. Pass `nil` to keep the sequence as the store has it.
    ///
    /// - Parameters:
    ///   - point: The DataPoint to run.
    ///   - drainDeadline: How long running operations may take at graceful shutdown; 10 s by default.
    ///   - dataBunchSize: The `data` sequence's bunch size; 64 by default.
    public init(_ point: DataPoint, drainDeadline: Duration = .seconds(10), dataBunchSize: Int? = 64) {
        self.point = point
        self.drainDeadline = drainDeadline
        self.dataBunchSize = dataBunchSize
    }

    /// Runs the DataPoint until graceful shutdown has drained it, or until the task is cancelled.
    ///
    /// - Throws: ``RelayError`` when the DataPoint cannot run, or its store fails to close.
    public func run() async throws {
        if let dataBunchSize {
            _ = try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: dataBunchSize))
        }
        let point = self.point
        let drainDeadline = self.drainDeadline
        try await withGracefulShutdownHandler {
            try await point.run()
        } onGracefulShutdown: {
            point.beginShutdown(gracePeriod: drainDeadline)
        }
    }
}
