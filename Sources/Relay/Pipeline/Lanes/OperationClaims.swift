/// The interface through which workers claim ready operations and report how their attempts ended.
///
/// A worker's loop is one call per step: it reports the ends of the attempts it ran, gets its next job (run an
/// operation, probe an offline destination, park, or exit), and, while its lane's operations finish fast, claims more
/// ready operations into a batch. It is modelled on swift-jobs' queue driver, whose workers pop a job, run it, and
/// report it finished or failed: here the three are one step, so that a worker takes the lock once per batch.
///
/// A claim is a lease held by the worker until it reports the attempt's end. In the pipeline's state machine, the
/// only conformer, a worker that stops reports its claims as returned, and a process that stops takes every lease
/// with it: recovery finds the attempts started and never ended, and runs them again. A store shared by several
/// processes would conform with leases that expire, so that another process reclaims the operations of one that
/// stopped answering, as swift-jobs' PostgreSQL driver reclaims jobs left in processing. Relay does not build that
/// store yet.
protocol OperationClaims {
    /// A worker's step: applies the ends of the attempts it reports, gives it its next job, and, while `limit` is
    /// above one, claims up to `limit - 1` more ready operations of its lane into `claimed`.
    ///
    /// - Parameters:
    ///   - worker: The worker, as its lane spawned it.
    ///   - lane: The worker's lane.
    ///   - ends: How each attempt it ran or gave back since its last step ended, in claim order.
    ///   - claimWake: Whether the worker was woken or spawned for work, and now takes that wake.
    ///   - cancelled: Whether the worker's task is cancelled.
    ///   - limit: The most operations the worker takes in this step, its next job included.
    ///   - batch: What the worker shares with the pipeline about its claims (see ``WorkerBatch``).
    ///   - claimed: Receives the claimed operations beyond the next job, in start order.
    ///   - now: The clock's time.
    ///   - actions: Receives what the step asks the shell to do.
    /// - Returns: The worker's next job.
    mutating func workerStep(
        _ worker: UInt64,
        lane: Int32,
        ended ends: [PipelineStateMachine.EndedAttempt],
        claimWake: Bool,
        cancelled: Bool,
        limit: Int,
        batch: WorkerBatch,
        claimed: inout [PipelineStateMachine.Job],
        now: Int64,
        into actions: inout PipelineActions
    ) -> PipelineStateMachine.NextJob
}

extension PipelineStateMachine: OperationClaims {}
