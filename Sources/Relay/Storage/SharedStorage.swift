import Foundation

/// A store that several processes open at once, each running a DataPoint on it: a fleet.
///
/// A DataPoint on a shared store commits what it enqueues through ``commit(_:startTimes:)``, which numbers the commit
/// fleet-wide and makes it visible to every process; it runs only the operations the store claims for it, which the
/// store hands in through the ``SharedLink`` that ``run(_:)`` gets; and its handles settle when the store reports
/// their outcomes, from whichever process ran them. What it runs reaches the store as records through
/// ``Storage/append(_:)``, as with any store: an outcome counts once the store has recorded it under the claim that
/// ran it, and the store refuses one from a process whose claim has lapsed.
///
/// RelayPostgres's store is one. Every process of a fleet registers the same sequences and executors: a process claims
/// only operations of sequences it has registered.
public protocol SharedStorage: Storage {
    /// Commits operations enqueued in this process as one commit, numbered by the store.
    ///
    /// Nothing is visible to any process before the commit is durable, and a commit that throws leaves nothing.
    ///
    /// - Parameters:
    ///   - operations: The commit's operations, in call order, without snapshots.
    ///   - startTimes: When some of them may start, as ``DataPoint/enqueue(_:at:)-([CallOperation],_)`` asks; an
    ///     operation stored already keeps its own schedule.
    /// - Returns: The commit's snapshot number, and the outcomes of its operations that have one already.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownDependency``, ``RelayError/Code/dependencyCycle``,
    ///   ``RelayError/Code/conflictingOperation``, ``RelayError/Code/unknownSequence`` or
    ///   ``RelayError/Code/storageFailure``.
    func commit(_ operations: [CallOperation], startTimes: [UUID: Date]) async throws -> SharedCommit

    /// Commits operations enqueued in this process and changes to the document as one commit, numbered by the store:
    /// both are visible to every process, or neither.
    ///
    /// ``DataPoint/transaction(isolation:_:)`` calls it for a transaction that changes models, relations or
    /// key-values, or erases models. The store checks the changes and adds their cascades against the document as it
    /// holds it, under the lock that orders its commits (see ``SharedDocumentSlice``), and answers with the changes it
    /// committed, which carry the commit's number as their version (see ``SharedModelChange``). A store that keeps no
    /// models refuses changes with ``RelayError/Code/invalidArgument`` and commits nothing; that is what this does
    /// unless a store provides it.
    ///
    /// - Parameters:
    ///   - operations: The commit's operations, in call order, without snapshots; there may be none.
    ///   - changes: The changes, in order; a later change of a model replaces an earlier one.
    ///   - erasures: The models the transaction erases, with what they own (S23).
    ///   - startTimes: When some of the operations may start.
    /// - Returns: As ``commit(_:startTimes:)`` returns, with the changes committed in ``SharedCommit/changes``.
    /// - Throws: As ``commit(_:startTimes:)`` throws, and ``RelayError/Code/modelNotFound`` for a relation that names
    ///   a model the store does not hold.
    func commit(
        _ operations: [CallOperation], changes: [ModelChange], erasures: [Alias], startTimes: [UUID: Date]
    ) async throws -> SharedCommit

    /// Runs the store's side of the fleet for a running DataPoint until the task is cancelled: claims operations
    /// and hands them to `link` to run, keeps their claims alive, and reports the outcomes of operations awaited here.
    ///
    /// A running DataPoint runs it as a child task instead of ``Storage/maintain()``.
    ///
    /// - Parameter link: What the store hands the DataPoint, and asks of it.
    func run(_ link: SharedLink) async

    /// Registers a sequence fleet-wide, or reconfigures it: from the next claim on, its bunch size bounds how many of
    /// its operations run at once across every process, in the order its algorithm gives.
    ///
    /// ``DataPoint/upsertCallSequence(_:)``, ``CallSequence/setBunchSize(_:)`` and ``CallSequence/setAlgorithm(_:)``
    /// call it on a shared store before they change anything in their process, so that a sequence the store could not
    /// register is registered nowhere; a DataPoint that opens registers its default sequences without `replacing`, so
    /// that it leaves them as the fleet configured them.
    ///
    /// - Parameters:
    ///   - sequence: The sequence's name.
    ///   - bunchSize: How many of its operations may run at once, fleet-wide.
    ///   - algorithm: The order its operations start in.
    ///   - replacing: Whether a sequence the store knows already takes this configuration; if `false`, it keeps its
    ///     own.
    /// - Throws: ``RelayError`` with ``RelayError/Code/invalidBunchSize`` for a bunch size below 1, or
    ///   ``RelayError/Code/storageFailure``.
    func configure(
        _ sequence: CallSequence.Name, bunchSize: Int, algorithm: CallSequence.Algorithm, replacing: Bool
    ) async throws

    /// Moves the fleet-wide suspension count of a sequence, or of every sequence when `sequence` is `nil`, by
    /// `change`, never below zero: while it is above zero, the store claims no operation of it for any process.
    ///
    /// ``DataPoint/suspend(reason:)``, ``DataPoint/resume(reason:)`` and their ``CallSequence`` counterparts call it
    /// on a shared store, from any process: a suspension made in one process is resumed from any. A change that
    /// suspends (from zero) or resumes (to zero) is announced to the other processes' streams of every event, with
    /// `reason` (see ``SharedEvent/init(sequenceName:kind:date:)``); the process that made it announces it itself.
    ///
    /// - Parameters:
    ///   - sequence: The sequence, or `nil` for every sequence.
    ///   - change: `1` to suspend, `-1` to resume, or more at once.
    ///   - reason: Why, for the events that announce the change.
    /// - Returns: The count before and after the change.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownSequence`` for a sequence the store does not know, or
    ///   ``RelayError/Code/storageFailure``.
    func changeSuspensions(
        of sequence: CallSequence.Name?, by change: Int, reason: String
    ) async throws -> (previous: Int, count: Int)

    /// The operation `id` as the store holds it, wherever it was enqueued and wherever it runs, or `nil` when the store
    /// holds no such operation.
    ///
    /// ``DataPoint/handle(for:)`` calls it for an operation that its DataPoint does not hold: the handle it returns
    /// settles when the store reports the operation's outcome, as the handle of an operation enqueued here does.
    ///
    /// - Parameter id: The operation's id.
    /// - Returns: The operation with its snapshot, the attempts it has had, when it was enqueued, and its outcome once
    ///   it has one.
    /// - Throws: ``RelayError`` with ``RelayError/Code/storageFailure``.
    func operation(_ id: UUID) async throws -> StoredOperation?

    /// Where operation `id` stands as the store holds it, wherever it was enqueued and wherever it runs, or `nil` when
    /// the store holds no such operation.
    ///
    /// ``DataPoint/status(of:)`` and ``CallHandle/status`` call it for an operation that their DataPoint does not
    /// hold.
    ///
    /// - Parameter id: The operation's id.
    /// - Returns: Its status: waiting (and why, as far as the store knows), running, or ended.
    /// - Throws: ``RelayError`` with ``RelayError/Code/storageFailure``.
    func status(of id: UUID) async throws -> CallStatus?

    /// Records the outcome of an attempt of operation `id`, which this process runs, with the relations and the other
    /// changes the attempt staged, before the DataPoint records the attempt's end: the store checks the relations
    /// against the document it holds, under the lock that orders its commits, and commits the outcome and the changes
    /// together, or nothing.
    ///
    /// A process's copy of the document may lag the store's: a model another process has just added or removed, say.
    /// So on a shared store the store decides whether an attempt's staged relations hold (S21, S23), and the DataPoint
    /// calls this for an attempt that completed or skipped and staged a relation; it applies the changes the store
    /// committed to the document through ``SharedLink/apply(_:)``. A refusal fails the operation, as a relation that
    /// names a missing model does on a store of one process; a throw leaves the attempt to be tried again, as a
    /// retry. A store that keeps no models refuses, which is what this does unless a store provides it.
    ///
    /// - Parameters:
    ///   - id: The operation, whose claim this process holds.
    ///   - result: The attempt's result: completed or skipped.
    ///   - changes: What the attempt staged, in order.
    ///   - ran: How long the attempt ran.
    /// - Returns: Why the changes cannot be committed, when a relation names a model the store does not hold (nothing
    ///   is committed then), or `nil` once the outcome and the changes are committed.
    /// - Throws: ``RelayError`` with ``RelayError/Code/storageFailure`` when the store could not tell, such as when
    ///   this process no longer holds the operation's claim.
    func commitStaged(_ id: UUID, result: CallResult, changes: [ModelChange], ran: Duration) async throws -> RelayError?

    /// Sets or releases one context's hold on an operation, wherever it waits: no process starts it until the latest
    /// of its holds has passed.
    ///
    /// ``DataPoint/hold(_:until:context:)`` calls it for every operation of a shared store: one that its DataPoint
    /// holds keeps the hold in memory too, and the store's copy holds it wherever the operation waits next (a retry, a
    /// destination gone offline, a lease lost). A hold on an operation that runs applies when it waits again. The
    /// store announces the hold to the event streams of the processes that do not hold the operation; the one that
    /// holds it announces it itself.
    ///
    /// - Parameters:
    ///   - id: The operation's id.
    ///   - until: When the hold ends, or `nil` to release the context's hold.
    ///   - context: Which hold to set; holds of different contexts combine.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownOperation``, ``RelayError/Code/operationFinished`` or
    ///   ``RelayError/Code/storageFailure``.
    func hold(_ id: UUID, until: Date?, context: String?) async throws

    /// Cancels an operation that this process does not hold, wherever it is: one that waits ends cancelled at once,
    /// its dependents with it; one that runs in another process is cancelled there, through
    /// ``SharedLink/cancel(_:)``.
    ///
    /// ``DataPoint/cancel(_:)`` calls it for an operation that its DataPoint does not know.
    ///
    /// - Parameter id: The operation's id.
    /// - Returns: Whether anything changed: `false` for an operation that ended, or whose cancellation was asked.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownOperation`` when the store holds no such operation, or
    ///   ``RelayError/Code/storageFailure``.
    func cancel(_ id: UUID) async throws -> Bool

    /// Removes finished operations from the store now, wherever they ran, before their retention passes.
    ///
    /// ``DataPoint/purge(_:)-(Sequence<UUID>)`` calls it on a shared store; the DataPoint purges its own copies
    /// too.
    ///
    /// - Parameter ids: The finished operations; those the store does not hold are passed over.
    /// - Returns: How many operations were removed.
    /// - Throws: ``RelayError`` with ``RelayError/Code/operationUnfinished`` when one has not finished, and then
    ///   nothing is removed; ``RelayError/Code/storageFailure``.
    func purge(_ ids: [UUID]) async throws -> Int
}

extension SharedStorage {
    /// Commits operations alone, and refuses changes to the document: a store that keeps no models.
    public func commit(
        _ operations: [CallOperation], changes: [ModelChange], erasures: [Alias], startTimes: [UUID: Date]
    ) async throws -> SharedCommit {
        guard changes.isEmpty, erasures.isEmpty else {
            throw RelayError(.invalidArgument, "this shared store keeps no models; nothing was committed")
        }
        return try await commit(operations, startTimes: startTimes)
    }

    /// Refuses what an attempt staged: a store that keeps no models.
    public func commitStaged(
        _ id: UUID, result: CallResult, changes: [ModelChange], ran: Duration
    ) async throws -> RelayError? {
        RelayError(.invalidArgument, "this shared store keeps no models; nothing the attempt staged was committed")
    }
}

/// What a shared store's commit did.
public struct SharedCommit: Sendable, Hashable {
    /// The commit's snapshot number, fleet-wide.
    public let snapshot: UInt64
    /// The outcomes of the commit's operations that have one already: known ones that finished, and new ones
    /// cancelled because a dependency had failed.
    public let outcomes: [UUID: CallResult]
    /// The operations the commit added that the DataPoint announces to its event streams as enqueued; the store
    /// announces the others, if any (through ``SharedLink/publish(_:)``), such as those of a commit that joined a
    /// transaction still open.
    public let announced: [UUID]
    /// Whether the commit is visible to every process as it returns, so that the DataPoint applies its document
    /// changes at once; a commit that joined a transaction still open is not, and the store applies its changes
    /// through ``SharedLink/apply(_:)`` once that transaction commits.
    public let isVisible: Bool
    /// The document changes the commit made, in order: the transaction's, then the removals they cascade to (S23).
    public let changes: [ModelChange]

    /// Creates a commit's answer.
    ///
    /// - Parameters:
    ///   - snapshot: The commit's snapshot number.
    ///   - outcomes: The outcomes its operations have already.
    ///   - announced: The operations it added that the DataPoint announces as enqueued.
    ///   - isVisible: Whether every process can see the commit as it returns.
    ///   - changes: The document changes it made, cascades included.
    public init(
        snapshot: UInt64, outcomes: [UUID: CallResult] = [:], announced: [UUID] = [], isVisible: Bool = true,
        changes: [ModelChange] = []
    ) {
        self.snapshot = snapshot
        self.outcomes = outcomes
        self.announced = announced
        self.isVisible = isVisible
        self.changes = changes
    }
}

/// A running DataPoint, as its shared store sees it: where claimed operations go to run, and where outcomes go to
/// the handles that await them.
public struct SharedLink: Sendable {
    let core: PipelineCore

    /// Hands operations claimed for this process to the DataPoint, which runs them as it runs its own.
    ///
    /// Each carries its snapshot, and in ``StoredOperation/attempts`` the attempts before this claim. One the
    /// DataPoint knows already is left as it is: one still running here ends under the new claim, and one that
    /// finished here is not run again. Its outcome comes back instead, for the store to record under the new claim:
    /// the store gave it up when the database was out of reach, and claimed the operation again.
    ///
    /// - Parameter claimed: The operations, in start order.
    /// - Returns: The outcomes of those that finished here already.
    @discardableResult
    public func run(_ claimed: [StoredOperation]) -> [UUID: CallResult] {
        core.adopt(claimed)
    }

    /// Cancels operations this process runs, as another process asked through ``SharedStorage/cancel(_:)``: each
    /// as ``DataPoint/cancel(_:)`` would, its outcome recorded under its claim.
    ///
    /// - Parameter ids: The operations; those this process does not know, or that ended, are left as they are.
    public func cancel(_ ids: [UUID]) async {
        for id in ids { _ = try? await core.cancelHere(id) }
    }

    /// Stops running here the operations whose claims this process lost: their leases expired, and the fleet runs
    /// them elsewhere.
    ///
    /// One that waits here leaves at once; a running one's attempt is cancelled, and whatever it returns is not
    /// recorded (the store would refuse it). Their handles here settle when the store reports their outcomes.
    ///
    /// - Parameter ids: The operations; those this process does not run, or that ended, are left as they are.
    public func abandon(_ ids: [UUID]) {
        core.abandon(ids)
    }

    /// Settles the handles of this process that await operations that ended, wherever they ran.
    ///
    /// - Parameter outcomes: Each operation's terminal state.
    public func settle(_ outcomes: [UUID: CallResult]) {
        core.remote.settle(outcomes)
    }

    /// The operations enqueued here whose handles await an outcome; a store that may have missed an announcement
    /// looks their outcomes up.
    public var awaited: [UUID] { core.remote.awaited }

    /// Those of `ids` whose handles here await an outcome, in their order: what a store that hears of operations
    /// that ended settles here, in time proportional to `ids` rather than to every handle awaited.
    ///
    /// - Parameter ids: Operations that ended, wherever they ran.
    /// - Returns: The awaited ones.
    public func awaited(among ids: [UUID]) -> [UUID] { core.remote.awaited(among: ids) }

    /// Those of `ids` whose commits returned here and whose handles await an outcome, in their order: a store
    /// whose commit may join a transaction of the application's looks these up when it does not hold them.
    ///
    /// - Parameter ids: Operations the store does not hold.
    /// - Returns: The ones whose commits returned.
    public func committed(among ids: [UUID]) -> [UUID] { core.remote.awaited(among: ids, committedOnly: true) }

    /// Ends the wait of the handles here for operations that will never run, such as those whose commit joined a
    /// transaction that rolled back.
    ///
    /// - Parameters:
    ///   - ids: The operations; those whose commits have not returned here are left as they are.
    ///   - error: What each handle's wait throws.
    public func fail(_ ids: [UUID], with error: RelayError) { core.remote.fail(ids, with: error) }

    /// Delivers what happened in other processes to this DataPoint's event streams, after every event of its own
    /// already published.
    ///
    /// - Parameter events: The events, in the order they happened.
    public func publish(_ events: [SharedEvent]) {
        core.publishShared(events)
    }

    /// Applies the document changes of a commit that the store made for this process, as it returns, such as the
    /// changes an attempt staged, committed with its outcome: each model changes unless the DataPoint holds a later
    /// version of it already, or the follower has read that commit already (``follow(_:through:)``).
    ///
    /// - Parameter changes: The changes, each with its commit's number.
    public func apply(_ changes: [SharedModelChange]) {
        core.applyShared(changes)
    }

    /// Applies the document's changes that the store read as it follows every process's commits, in the order of
    /// their versions, and notes that the DataPoint now holds every change through `version`: each model changes
    /// unless the DataPoint holds a later version of it already, and change streams hear of what changed.
    ///
    /// - Parameters:
    ///   - changes: The changes, each with its commit's number.
    ///   - version: A version through which the store has read every change: no change of an earlier commit will
    ///     come.
    public func follow(_ changes: [SharedModelChange], through version: UInt64) {
        core.followShared(changes, through: version)
    }

    /// Replaces the document with the store's whole document through `version`.
    ///
    /// A store calls it when it finds that this process fell behind what it keeps of removals (one cut off from it
    /// for longer than it keeps them): each row applies as ``follow(_:through:)`` applies a change, and a model the
    /// DataPoint holds that the rows do not name, from before `version`, was removed meanwhile. Change streams hear
    /// of what changed.
    ///
    /// - Parameters:
    ///   - rows: Every model, key-value and relation the store holds, removals it still keeps included, each with
    ///     the number of the commit that last wrote it.
    ///   - version: The number of the last commit the rows include.
    public func reload(_ rows: [SharedModelChange], through version: UInt64) {
        core.reloadShared(rows, through: version)
    }

    /// Whether a stream here needs other processes' events.
    ///
    /// It does while a stream of every event is open, or one of an operation that another process runs; a store
    /// need not read other processes' events otherwise.
    public var followsEvents: Bool {
        core.read { $0.followsSharedEvents }
    }

    /// The operations that a stream of one operation follows here while another process runs them.
    ///
    /// A store publishes their events as it reads them (``publish(_:)``); once one has ended, and the store has read
    /// every event up to its end without meeting its terminal event (the stream opened after it), the store publishes
    /// that event from the operation's outcome, so that no such stream waits for an event it missed.
    public var followedElsewhere: [UUID] {
        core.readWithDirectory { $0.followedElsewhere(in: $1) }
    }

    /// The sequences registered in this process: the store claims operations of these only.
    public var sequences: [CallSequence.Name] {
        core.read { machine in machine.lanes.filter(\.isRegistered).map(\.name) }
    }

    /// How many claimed operations wait here for a worker: the store claims more once few do.
    public var waiting: Int {
        core.read { machine in machine.unfinishedCount - machine.runningTotal }
    }
}
