/// A clock that tells who sleeps on it, as a test's manual clock does.
///
/// A DataPoint on such a clock notes when an operation's executor sleeps on it (see ``ClockSleepObserver``), so that
/// a test's wait for idle can tell an operation that only the clock can move from one whose work is in flight.
package protocol SleeperReportingClock: Sendable {
    /// The clock's time and its sleepers' deadlines, in words.
    var sleepersDescription: String { get }
}

/// What a sleep on a ``SleeperReportingClock`` tells the pipeline: that the executor of a running operation begins,
/// or ends, a sleep.
///
/// Workers bind it around an attempt only when the DataPoint's clock reports its sleepers, so a DataPoint on any other
/// clock never reads it. A sleep that races other work, such as an HTTP attempt's deadline, binds `nil`: the attempt
/// waits for its response, not for the clock.
package struct ClockSleepObserver: Sendable {
    /// The observer of the attempt the current task runs, if any.
    @TaskLocal package static var current: ClockSleepObserver?

    private let core: PipelineCore
    private let slot: Int32

    init(core: PipelineCore, slot: Int32) {
        self.core = core
        self.slot = slot
    }

    /// Called by the clock before a sleep registers.
    package func began() {
        core.noteClockSleep(slot, began: true)
    }

    /// Called by the clock once the sleep has ended, woken or cancelled.
    package func ended() {
        core.noteClockSleep(slot, began: false)
    }
}
