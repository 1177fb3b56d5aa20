import Synchronization

/// The lock over the pipeline's state machine and over its directory of ids: the platform's mutex.
///
/// One name for the one lock type the engine uses, so that changing it is one line.
typealias StateLock<State> = Mutex<State>
