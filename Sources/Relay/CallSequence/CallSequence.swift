/// A named lane that runs its ready operations at most ``bunchSize`` at a time.
///
/// Every DataPoint has the sequences ``Name/data``, ``Name/downloads`` and ``Name/uploads``, each with a bunch size of
/// 1. Add a sequence, or reconfigure one, with ``DataPoint/upsertCallSequence(_:)``:
///
/// ```swift
/// let webhooks = try CallSequence(name: "webhooks", bunchSize: 16)
/// try await point.upsertCallSequence(webhooks)
/// try await webhooks.suspend(reason: "maintenance window")
/// ```
///
/// The sequence runs its operations under a task group of workers, at most `bunchSize` of them, which take ready
/// operations in start order: higher priority first, then earlier commit, then call order within a commit.
///
/// - Important: Suspension is counted: every ``suspend(reason:)`` needs a matching ``resume(reason:)``. While
///   suspended, nothing new starts and running operations finish.
public actor CallSequence {
    /// The sequence's name, unique within its DataPoint.
    public nonisolated let name: Name
    private var detachedBunchSize: Int
    private var detachedAlgorithm: Algorithm
    private var detachedSuspensions = 0
    private var core: PipelineCore?

    /// Creates a sequence, to be added to a DataPoint with ``DataPoint/upsertCallSequence(_:)``.
    ///
    /// - Parameters:
    ///   - name: The sequence's name.
    ///   - bunchSize: How many operations may run at once; at least 1.
    ///   - algorithm: How ready operations are ordered.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/invalidBunchSize`` when `bunchSize` is below 1.
    public init(name: Name, bunchSize: Int = 1, algorithm: Algorithm = .flat) throws {
        try Self.validate(bunchSize: bunchSize, name: name)
        self.name = name
        detachedBunchSize = bunchSize
        detachedAlgorithm = algorithm
    }

    private static func validate(bunchSize: Int, name: Name) throws(RelayError) {
        guard bunchSize >= 1 else {
            throw RelayError(.invalidBunchSize, "bunch size \(bunchSize) for sequence \(name) is below 1")
        }
    }

    /// How many operations may run at once.
    public var bunchSize: Int {
        core?.read { $0.sequenceConfiguration(name)?.bunchSize } ?? detachedBunchSize
    }

    /// How ready operations are ordered.
    public var algorithm: Algorithm {
        core?.read { $0.sequenceConfiguration(name)?.algorithm } ?? detachedAlgorithm
    }

    /// The current suspension count; the sequence starts operations only at zero.
    public var suspensionCount: Int {
        core?.read { $0.suspensionCount(of: name) } ?? detachedSuspensions
    }

    /// The reasons of the sequence's offline destinations, each naming its destination, or `nil` while every
    /// destination answers; operations to an offline destination wait until its probe answers, and the others go on.
    public var offlineReason: String? {
        core?.read { $0.offlineReason(of: name) }
    }

    /// Changes how many operations may run at once, effective immediately.
    ///
    /// Raising it starts waiting operations at once; lowering it cancels nothing that already runs.
    ///
    /// - Parameter size: The new bunch size; at least 1.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/invalidBunchSize`` when `size` is below 1; on a shared
    ///   store, ``RelayError/Code/storageFailure`` when the store did not take the change, which then applies nowhere.
    public func setBunchSize(_ size: Int) async throws {
        try Self.validate(bunchSize: size, name: name)
        if let core {
            try await core.setBunchSize(size, of: name)
        } else {
            detachedBunchSize = size
        }
    }

    /// Changes how ready operations are ordered, effective immediately.
    ///
    /// - Parameter algorithm: The new algorithm.
    /// - Throws: ``RelayError`` when the change cannot be recorded; on a shared store, the change then applies nowhere.
    public func setAlgorithm(_ algorithm: Algorithm) async throws {
        if let core {
            try await core.setAlgorithm(algorithm, of: name)
        } else {
            detachedAlgorithm = algorithm
        }
    }

    /// Stops starting operations until a matching ``resume(reason:)``; running ones finish.
    ///
    /// - Parameter reason: Why, reported in the ``CallEvent/Kind/suspended(reason:)`` event.
    /// - Returns: The new suspension count.
    /// - Throws: ``RelayError`` when the change cannot be recorded.
    @discardableResult
    public func suspend(reason: String = "suspended by request") async throws -> Int {
        guard let core else {
            detachedSuspensions += 1
            return detachedSuspensions
        }
        return try await core.suspend(name, reason: reason)
    }

    /// Undoes one ``suspend(reason:)``; at zero the sequence starts operations again.
    ///
    /// Extra calls do nothing.
    ///
    /// - Parameter reason: Why, reported in the ``CallEvent/Kind/resumed(reason:)`` event.
    /// - Returns: The new suspension count.
    /// - Throws: ``RelayError`` when the change cannot be recorded.
    @discardableResult
    public func resume(reason: String = "resumed by request") async throws -> Int {
        guard let core else {
            detachedSuspensions = max(0, detachedSuspensions - 1)
            return detachedSuspensions
        }
        return try await core.resume(name, reason: reason)
    }

    /// The configuration that ``attach(to:)`` binds, without binding it: the sequence's own while it is detached, the
    /// DataPoint's once it is attached.
    func configuration(for core: PipelineCore) throws(RelayError) -> (bunchSize: Int, algorithm: Algorithm) {
        if let attached = self.core, attached !== core {
            throw RelayError(.sequenceAttached, "sequence \(name) already belongs to another DataPoint")
        }
        if self.core != nil, let current = core.read({ $0.sequenceConfiguration(name) }) { return current }
        return (detachedBunchSize, detachedAlgorithm)
    }

    /// Binds the sequence to a DataPoint; returns the suspensions it gathered while detached.
    func attach(to core: PipelineCore) throws(RelayError) -> Int {
        _ = try configuration(for: core)
        let suspensions = detachedSuspensions
        self.core = core
        detachedSuspensions = 0
        return suspensions
    }

    /// Supervises the lane's workers: spawns one for each request the pipeline makes, under one task group.
    func run(in core: PipelineCore, lane: Int32) async {
        await withDiscardingTaskGroup { group in
            repeat {
                while let worker = core.takeSpawn(lane: lane) {
                    group.addTask { await core.runWorker(worker, lane: lane) }
                }
            } while await core.waitForSpawnRequest(lane: lane)
        }
    }
}
