// libovgenai_c_relay.so: cdefs/94_ovgenai_relay.h. One call slot between a caller's thread and a pipeline's owner
// thread, handed over with a mutex and two condition variables (no interpreter lock involved on either side).
// No exception leaves an extern "C" function: the only throwing operations (allocation, std::system_error from
// the mutex) are caught at the boundary.

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include <poll.h>
#include <sys/types.h>
#include <unistd.h>

extern "C" {
typedef int (*ovgenai_relay_fn)(void*, const void*, const void*, const void*, void*);
typedef const char* (*ovgenai_relay_error_fn)(void);
typedef int (*ovgenai_relay_reader_fn)(const void*, char*, size_t*);
}

namespace {

enum class Slot { empty, reserved, posted, running, done };

struct Call {
    ovgenai_relay_fn fn = nullptr;
    void* a0 = nullptr;
    const void* a1 = nullptr;
    const void* a2 = nullptr;
    const void* a3 = nullptr;
    void* a4 = nullptr;
    int status = 0;
    // ovgenai_relay_post_read: the string form of *a4 read on the owner into the caller's buffer
    ovgenai_relay_reader_fn reader = nullptr;
    char* read_buf = nullptr;
    size_t* read_size = nullptr;
};

constexpr size_t kNotRead = static_cast<size_t>(-1);

// Runs on the owner right after a call (while its caches are still warm, and before its caller is woken, so the
// caller finds the text ready): the reader's two-call string getter over the results the call wrote to *a4.
void read_result(const Call& c, int status) {
    if (c.read_size == nullptr)
        return;
    bool read = false;
    if (status == 0 && c.reader != nullptr && c.a4 != nullptr && c.read_buf != nullptr) {
        const void* results = *static_cast<void* const*>(c.a4);
        read = results != nullptr && c.reader(results, c.read_buf, c.read_size) == 0;
    }
    if (!read)
        *c.read_size = kNotRead;
}

void write_byte(int fd) {
    if (fd < 0)
        return;
    const char zero = 0;
    while (::write(fd, &zero, 1) < 0 && errno == EINTR) {
    }
    // EAGAIN (a full pipe: a wake-up is pending anyway) and a closed fd are ignored
}

// Spins up to `us` microseconds until flag is non-zero (true), or returns false. A brief spin lets a thread pick up
// what another hands it while it would still be falling asleep: on a VM a futex wake-up costs tens of
// microseconds, more than a short call.
bool spin_until(const std::atomic<int>& flag, int us) {
    if (us <= 0)
        return false;
    using clock = std::chrono::steady_clock;
    const auto until = clock::now() + std::chrono::microseconds(us);
    for (unsigned i = 1;; ++i) {
        if (flag.load(std::memory_order_acquire) != 0)
            return true;
        if ((i & 63) == 0 && clock::now() >= until)
            return false;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#else
        std::this_thread::yield();
#endif
    }
}

}  // namespace

struct ovgenai_relay_opaque {
    pid_t creator = ::getpid();  // a forked child does not destroy what its parent's threads may wait on
    std::mutex mutex;
    std::condition_variable owner_cv;  // the owner waits here in serve() for a call or a wake-up
    std::condition_variable done_cv;   // the caller waits here for its call's end
    Slot slot = Slot::empty;
    Call call;
    bool serving = false;      // the owner is inside serve()
    bool wake_pending = false;  // serve() returns as soon as the slot is idle
    int notify_fd = -1;
    ovgenai_relay_error_fn error_source = nullptr;  // read on the owner after a failed call (a thread-local text)
    bool has_error = false;
    std::string error;
    // Mirrors of the slot's state, read without the mutex by spinning threads: the owner's "a call is posted or a
    // wake-up pending", the caller's "the call has ended".
    std::atomic<int> owner_work{0};
    std::atomic<int> call_done{0};
    std::atomic<int> owner_spin_us{0};   // after a call the owner spins up to this long for the next one before
                                         // sleeping, when the last call came that soon after the one before
    std::atomic<int> caller_spin_us{0};  // a waiting caller spins up to this long for its call's end before
                                         // sleeping, when the last call took no longer
    // What the spins go by: the last call's run time (stored by the owner) and the time from a call's end to the
    // next post (stored by post); ended_at is the last call's end (under the mutex).
    std::atomic<long long> last_run_us{0};
    std::atomic<long long> last_gap_us{0};
    std::chrono::steady_clock::time_point ended_at{};
    std::chrono::steady_clock::time_point started_at{};  // the last call's start on the owner (under the mutex)

    // Runs every call that is (or becomes) reserved or posted; returns once a wake-up is pending and the slot is
    // idle (empty, or done and waiting for its caller).
    int serve() {
        std::unique_lock<std::mutex> lock(mutex);
        serving = true;
        bool ran = false;
        for (;;) {
            if (slot == Slot::posted) {
                slot = Slot::running;
                owner_work.store(wake_pending ? 1 : 0, std::memory_order_relaxed);
                Call c = call;
                lock.unlock();
                const auto started = std::chrono::steady_clock::now();
                const int status = c.fn(c.a0, c.a1, c.a2, c.a3, c.a4);
                const auto finished = std::chrono::steady_clock::now();
                last_run_us.store(
                    std::chrono::duration_cast<std::chrono::microseconds>(finished - started).count(),
                    std::memory_order_relaxed);
                const char* text = (status != 0 && error_source) ? error_source() : nullptr;
                std::string copied = text ? text : "";
                read_result(c, status);
                lock.lock();
                call.status = status;
                has_error = text != nullptr;
                error.swap(copied);
                slot = Slot::done;
                started_at = started;
                ended_at = finished;
                call_done.store(1, std::memory_order_release);
                const int fd = notify_fd;
                notify_fd = -1;
                // the waiter is woken with the mutex free: it takes it at once to collect the outcome
                lock.unlock();
                done_cv.notify_all();
                write_byte(fd);
                lock.lock();
                ran = true;
                continue;
            }
            if (slot != Slot::reserved && wake_pending) {
                wake_pending = false;
                owner_work.store(0, std::memory_order_relaxed);
                serving = false;
                return 0;
            }
            if (ran) {  // the caller's next call often comes within microseconds: look out for it a moment
                ran = false;
                const int spin = owner_spin_us.load(std::memory_order_relaxed);
                if (last_gap_us.load(std::memory_order_relaxed) <= spin) {
                    lock.unlock();
                    spin_until(owner_work, spin);
                    lock.lock();
                }
                continue;
            }
            owner_cv.wait(lock);
        }
    }
};

extern "C" {

__attribute__((visibility("default"))) int ovgenai_relay_create(ovgenai_relay_opaque** relay) {
    if (relay == nullptr)
        return -1;
    *relay = new (std::nothrow) ovgenai_relay_opaque();
    return *relay == nullptr ? -1 : 0;
}

__attribute__((visibility("default"))) void ovgenai_relay_free(ovgenai_relay_opaque* relay) {
    // In a forked child the parent's owner thread is gone but the condition variable still counts it as a waiter:
    // destroying it would wait for that waiter forever. The child leaves it (its memory goes with the process).
    if (relay != nullptr && relay->creator != ::getpid())
        return;
    delete relay;
}

__attribute__((visibility("default"))) int ovgenai_relay_serve(ovgenai_relay_opaque* relay) {
    try {
        return relay->serve();
    } catch (...) {  // std::system_error from the mutex: nothing sensible is left to run
        return -1;
    }
}

__attribute__((visibility("default"))) void ovgenai_relay_wake(ovgenai_relay_opaque* relay) {
    try {
        std::lock_guard<std::mutex> lock(relay->mutex);
        relay->wake_pending = true;
        relay->owner_work.store(1, std::memory_order_release);
        relay->owner_cv.notify_one();
    } catch (...) {
    }
}

__attribute__((visibility("default"))) int ovgenai_relay_reserve(ovgenai_relay_opaque* relay) {
    try {
        std::lock_guard<std::mutex> lock(relay->mutex);
        if (!relay->serving || relay->wake_pending || relay->slot != Slot::empty)
            return 0;
        relay->slot = Slot::reserved;
        return 1;
    } catch (...) {
        return 0;
    }
}

__attribute__((visibility("default"))) void ovgenai_relay_unreserve(ovgenai_relay_opaque* relay) {
    try {
        std::lock_guard<std::mutex> lock(relay->mutex);
        if (relay->slot == Slot::reserved) {
            relay->slot = Slot::empty;
            relay->owner_cv.notify_one();  // a wake-up that waited for the slot may go through now
        }
    } catch (...) {
    }
}

namespace {
void post(ovgenai_relay_opaque* relay, const Call& call) {
    try {
        std::lock_guard<std::mutex> lock(relay->mutex);
        if (relay->slot != Slot::reserved || call.fn == nullptr)
            return;  // a misuse: nothing runs, and wait() would not end — the binding never does it
        relay->last_gap_us.store(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now() - relay->ended_at).count(),
                                 std::memory_order_relaxed);
        relay->call = call;
        relay->notify_fd = -1;
        relay->slot = Slot::posted;
        relay->call_done.store(0, std::memory_order_relaxed);
        relay->owner_work.store(1, std::memory_order_release);
        relay->owner_cv.notify_one();
    } catch (...) {
    }
}
}  // namespace

__attribute__((visibility("default"))) void ovgenai_relay_post(ovgenai_relay_opaque* relay, ovgenai_relay_fn fn,
                                                               void* a0, const void* a1, const void* a2,
                                                               const void* a3, void* a4) {
    post(relay, Call{fn, a0, a1, a2, a3, a4});
}

__attribute__((visibility("default"))) void ovgenai_relay_post_read(ovgenai_relay_opaque* relay, ovgenai_relay_fn fn,
                                                                    void* a0, const void* a1, const void* a2,
                                                                    const void* a3, void* a4,
                                                                    ovgenai_relay_reader_fn reader, char* buf,
                                                                    size_t* size) {
    post(relay, Call{fn, a0, a1, a2, a3, a4, 0, reader, buf, size});
}

namespace {
void free_slot(ovgenai_relay_opaque* relay) {  // (under the mutex)
    relay->slot = Slot::empty;
    relay->call = Call{};
    relay->has_error = false;
    relay->error.clear();
    relay->owner_cv.notify_one();  // a wake-up that came while the slot was done goes through
}
}  // namespace

__attribute__((visibility("default"))) void ovgenai_relay_set_spin(ovgenai_relay_opaque* relay, int owner_us,
                                                                   int caller_us) {
    relay->owner_spin_us.store(owner_us < 0 ? 0 : owner_us, std::memory_order_relaxed);
    relay->caller_spin_us.store(caller_us < 0 ? 0 : caller_us, std::memory_order_relaxed);
}

__attribute__((visibility("default"))) void ovgenai_relay_set_error_source(ovgenai_relay_opaque* relay,
                                                                           ovgenai_relay_error_fn fn) {
    try {
        std::lock_guard<std::mutex> lock(relay->mutex);
        relay->error_source = fn;
    } catch (...) {
    }
}

namespace {
int collect(ovgenai_relay_opaque* relay, int* status) {  // (under the mutex, the call has ended)
    if (status != nullptr)
        *status = relay->call.status;
    if (relay->has_error)
        return 2;  // the slot stays the caller's until it takes the text (ovgenai_relay_take_error)
    free_slot(relay);
    return 1;
}

// Empties the non-blocking pipe read_fd; its non-zero bytes (signal numbers written by Python's signal handler) go
// on to forward_fd. True when there was one.
bool drain(int read_fd, int forward_fd) {
    bool signalled = false;
    char buf[256];
    for (;;) {
        const ssize_t n = ::read(read_fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return signalled;
        char numbers[sizeof buf];
        size_t k = 0;
        for (ssize_t i = 0; i < n; ++i)
            if (buf[i] != 0)
                numbers[k++] = buf[i];
        if (k > 0) {
            signalled = true;
            if (forward_fd >= 0)
                while (::write(forward_fd, numbers, k) < 0 && errno == EINTR) {
                }
        }
        if (static_cast<size_t>(n) < sizeof buf)
            return signalled;
    }
}
}  // namespace

__attribute__((visibility("default"))) int ovgenai_relay_wait(ovgenai_relay_opaque* relay, int timeout_ms,
                                                              int* status) {
    try {
        // a short call ends while its caller would still be falling asleep: look out for it a moment first
        const int spin = relay->caller_spin_us.load(std::memory_order_relaxed);
        if (timeout_ms != 0 && relay->last_run_us.load(std::memory_order_relaxed) <= spin)
            spin_until(relay->call_done, spin);
        std::unique_lock<std::mutex> lock(relay->mutex);
        auto ended = [relay] { return relay->slot == Slot::done; };
        if (timeout_ms < 0)
            relay->done_cv.wait(lock, ended);
        else if (!relay->done_cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), ended))
            return 0;
        return collect(relay, status);
    } catch (...) {
        return 0;
    }
}

__attribute__((visibility("default"))) int ovgenai_relay_wait_fd(ovgenai_relay_opaque* relay, int timeout_ms,
                                                                 int* status, int read_fd, int write_fd,
                                                                 int forward_fd) {
    try {
        using clock = std::chrono::steady_clock;
        const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
        {
            std::lock_guard<std::mutex> lock(relay->mutex);
            if (relay->slot == Slot::done)
                return collect(relay, status);
            relay->notify_fd = write_fd;  // the call's end writes a zero byte there (and clears it)
        }
        for (;;) {
            int ms = -1;
            if (timeout_ms >= 0) {
                const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
                ms = left.count() < 0 ? 0 : static_cast<int>(left.count()) + 1;
            }
            pollfd fds{read_fd, POLLIN, 0};
            const int n = ::poll(&fds, 1, ms);
            const bool signalled = n > 0 && drain(read_fd, forward_fd);  // (stale zero bytes go too)
            std::lock_guard<std::mutex> lock(relay->mutex);
            if (relay->slot == Slot::done)
                return collect(relay, status);  // (the end cleared notify_fd)
            if (signalled || (n == 0 && timeout_ms >= 0 && clock::now() >= deadline)) {
                relay->notify_fd = -1;
                return signalled ? -1 : 0;
            }
            // interrupted by a signal Python does not handle, or a stale byte of an earlier wait: again
        }
    } catch (...) {  // std::system_error from the mutex: leave nothing armed if that can still be done
        try {
            std::lock_guard<std::mutex> lock(relay->mutex);
            relay->notify_fd = -1;
        } catch (...) {
        }
        return 0;
    }
}

__attribute__((visibility("default"))) size_t ovgenai_relay_take_error(ovgenai_relay_opaque* relay, char* buf,
                                                                       size_t size) {
    try {
        std::lock_guard<std::mutex> lock(relay->mutex);
        if (relay->slot != Slot::done)
            return 0;
        const size_t n = relay->error.size();
        if (buf != nullptr && size > 0) {
            const size_t k = n < size - 1 ? n : size - 1;
            relay->error.copy(buf, k);
            buf[k] = '\0';
        }
        free_slot(relay);
        return n;
    } catch (...) {
        return 0;
    }
}

__attribute__((visibility("default"))) int ovgenai_relay_done(ovgenai_relay_opaque* relay) {
    try {
        std::lock_guard<std::mutex> lock(relay->mutex);
        return relay->slot == Slot::done ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

__attribute__((visibility("default"))) int ovgenai_relay_last_call_times(ovgenai_relay_opaque* relay,
                                                                           long long* started_ns, long long* ended_ns) {
    try {
        std::lock_guard<std::mutex> lock(relay->mutex);
        if (relay->ended_at == std::chrono::steady_clock::time_point{})
            return 0;
        using std::chrono::duration_cast;
        using std::chrono::nanoseconds;
        if (started_ns != nullptr)
            *started_ns = duration_cast<nanoseconds>(relay->started_at.time_since_epoch()).count();
        if (ended_ns != nullptr)
            *ended_ns = duration_cast<nanoseconds>(relay->ended_at.time_since_epoch()).count();
        return 1;
    } catch (...) {
        return 0;
    }
}

}  // extern "C"
