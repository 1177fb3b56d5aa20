// Two threads contend on a Synchronization.Mutex; with the argument `race`, they also write a plain global unlocked.
// Built with -sanitize=thread (Swift 5 mode, since the planted race is deliberate): without the shim TSan reports a
// false race on the guarded value; with it, none; and the planted race is reported either way.
import Dispatch
import Foundation
import Synchronization

let counter = Mutex(0)
var unguarded = 0
let race = CommandLine.arguments.contains("race")
let finished = DispatchSemaphore(value: 0)
for _ in 0..<2 {
    Thread {
        for _ in 0..<200_000 {
            counter.withLock { $0 += 1 }
            if race { unguarded += 1 }
        }
        finished.signal()
    }.start()
}
finished.wait()
finished.wait()
print("count", counter.withLock { $0 })
