/// What the attempts of one worker reach back to: the recorder of their reports and the pipeline that arms their
/// deadlines.
///
/// A worker makes one when it starts and hands it to every context it builds, so that starting an attempt retains an
/// object that only the worker uses, not the pipeline, whose count the committing task changes for every handle.
final class WorkerLink: Sendable {
    let core: PipelineCore
    let worker: UInt64
    let recorder = AttemptRecorder()

    init(core: PipelineCore, worker: UInt64) {
        self.core = core
        self.worker = worker
    }
}
