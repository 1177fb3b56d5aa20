// Teaches ThreadSanitizer the happens-before edge of a Synchronization.Mutex handed over in its slow path.
//
// Mutex's fast path is inlined into instrumented code, but its slow paths live in libswiftSynchronization.so, which
// is built without TSan: a lock handed over through the futex shows no happens-before, and TSan reports races on
// the data the mutex guards. Preloaded, this library wraps the three exported slow paths and tells TSan about the
// acquire and the release on the lock word. It changes nothing else: a real race is still reported.
//
// Build: clang -shared -fPIC -O1 -o mutex-tsan-shim.so mutex-tsan-shim.c -ldl
// Use:   LD_PRELOAD=/path/to/mutex-tsan-shim.so swift test --sanitize=thread
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// Weak, so that processes without the TSan runtime (the build tools that LD_PRELOAD also reaches) still load this.
extern void __tsan_acquire(void *address) __attribute__((weak));
extern void __tsan_release(void *address) __attribute__((weak));

// `self` of a borrowing method on _MutexHandle is the handle's address, passed in the Swift self register; the lock
// word is the handle's first field.
#define SWIFT_CC __attribute__((swiftcall))
#define SWIFT_SELF __attribute__((swift_context))

typedef SWIFT_CC void (*LockSlow)(uint32_t, void *SWIFT_SELF);
typedef SWIFT_CC bool (*TryLockSlow)(void *SWIFT_SELF);
typedef SWIFT_CC void (*UnlockSlow)(void *SWIFT_SELF);

static void *real(const char *symbol) {
    void *function = dlsym(RTLD_NEXT, symbol);
    if (function == NULL) {
        fprintf(stderr, "mutex-tsan-shim: %s not found\n", symbol);
        abort();
    }
    return function;
}

SWIFT_CC void lockSlow(uint32_t value, void *SWIFT_SELF handle) __asm__("$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF");
SWIFT_CC void lockSlow(uint32_t value, void *SWIFT_SELF handle) {
    static LockSlow next;
    if (next == NULL) next = (LockSlow)real("$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF");
    next(value, handle);
    if (__tsan_acquire) __tsan_acquire(handle);
}

SWIFT_CC bool tryLockSlow(void *SWIFT_SELF handle) __asm__("$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF");
SWIFT_CC bool tryLockSlow(void *SWIFT_SELF handle) {
    static TryLockSlow next;
    if (next == NULL) next = (TryLockSlow)real("$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF");
    bool locked = next(handle);
    if (locked && __tsan_acquire) __tsan_acquire(handle);
    return locked;
}

SWIFT_CC void unlockSlow(void *SWIFT_SELF handle) __asm__("$s15Synchronization12_MutexHandleV11_unlockSlowyyF");
SWIFT_CC void unlockSlow(void *SWIFT_SELF handle) {
    static UnlockSlow next;
    if (next == NULL) next = (UnlockSlow)real("$s15Synchronization12_MutexHandleV11_unlockSlowyyF");
    if (__tsan_release) __tsan_release(handle);
    next(handle);
}
