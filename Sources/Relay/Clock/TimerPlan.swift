/// What a timer loop does next: the pipeline's (``Timers``) or the attempt timer's (``AttemptDeadlines``).
///
/// Each loop's state counts its plans; a new deadline earlier than the one the loop sleeps toward makes the plan of
/// the current generation stale, and resumes the loop's parked wait so that it plans again.
enum TimerPlan: Sendable, Equatable {
    /// Sleep on the clock until `until`, or until the plan of `generation` goes stale.
    case sleep(until: Int64, generation: UInt64)
    /// Nothing is scheduled: wait until the plan of `generation` goes stale.
    case wait(generation: UInt64)
    case exit
}

extension ClockSource {
    /// Follows a timer loop's plan until it is due or stale; `false` when the plan is to exit.
    ///
    /// A sleep until the plan's deadline races `waitForRearm`, which returns once the plan goes stale.
    func follow(_ plan: TimerPlan, waitForRearm: @escaping @Sendable (UInt64) async -> Void) async -> Bool {
        switch plan {
        case .exit:
            return false
        case .wait(let generation):
            await waitForRearm(generation)
        case .sleep(let deadline, let generation):
            await withTaskGroup(of: Void.self) { group in
                group.addTask { try? await self.sleep(until: deadline) }
                group.addTask { await waitForRearm(generation) }
                await group.next()
                group.cancelAll()
            }
        }
        return true
    }
}
