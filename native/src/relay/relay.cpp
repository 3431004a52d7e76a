// libovgenai_c_relay.so: cdefs/94_ovgenai_relay.h. One call slot between a caller's thread and a pipeline's owner
// thread, handed over with a mutex and two condition variables (no interpreter lock involved on either side).
// No exception leaves an extern "C" function: the only throwing operations (allocation, std::system_error from
// the mutex) are caught at the boundary.

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <string>

#include <sys/types.h>
#include <unistd.h>

extern "C" {
typedef int (*ovgenai_relay_fn)(void*, const void*, const void*, const void*, void*);
typedef const char* (*ovgenai_relay_error_fn)(void);
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
};

void write_byte(int fd) {
    if (fd < 0)
        return;
    const char zero = 0;
    while (::write(fd, &zero, 1) < 0 && errno == EINTR) {
    }
    // EAGAIN (a full pipe: a wake-up is pending anyway) and a closed fd are ignored
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

    // Runs every call that is (or becomes) reserved or posted; returns once a wake-up is pending and the slot is
    // idle (empty, or done and waiting for its caller).
    int serve() {
        std::unique_lock<std::mutex> lock(mutex);
        serving = true;
        for (;;) {
            if (slot == Slot::posted) {
                slot = Slot::running;
                Call c = call;
                lock.unlock();
                const int status = c.fn(c.a0, c.a1, c.a2, c.a3, c.a4);
                const char* text = (status != 0 && error_source) ? error_source() : nullptr;
                std::string copied = text ? text : "";
                lock.lock();
                call.status = status;
                has_error = text != nullptr;
                error.swap(copied);
                slot = Slot::done;
                const int fd = notify_fd;
                notify_fd = -1;
                done_cv.notify_all();
                write_byte(fd);
                continue;
            }
            if (slot != Slot::reserved && wake_pending) {
                wake_pending = false;
                serving = false;
                return 0;
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

__attribute__((visibility("default"))) void ovgenai_relay_post(ovgenai_relay_opaque* relay, ovgenai_relay_fn fn,
                                                               void* a0, const void* a1, const void* a2,
                                                               const void* a3, void* a4) {
    try {
        std::lock_guard<std::mutex> lock(relay->mutex);
        if (relay->slot != Slot::reserved || fn == nullptr)
            return;  // a misuse: nothing runs, and wait() would not end — the binding never does it
        relay->call = Call{fn, a0, a1, a2, a3, a4, 0};
        relay->notify_fd = -1;
        relay->slot = Slot::posted;
        relay->owner_cv.notify_one();
    } catch (...) {
    }
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

__attribute__((visibility("default"))) void ovgenai_relay_set_error_source(ovgenai_relay_opaque* relay,
                                                                           ovgenai_relay_error_fn fn) {
    try {
        std::lock_guard<std::mutex> lock(relay->mutex);
        relay->error_source = fn;
    } catch (...) {
    }
}

__attribute__((visibility("default"))) int ovgenai_relay_wait(ovgenai_relay_opaque* relay, int timeout_ms,
                                                              int* status) {
    try {
        std::unique_lock<std::mutex> lock(relay->mutex);
        auto ended = [relay] { return relay->slot == Slot::done; };
        if (timeout_ms < 0)
            relay->done_cv.wait(lock, ended);
        else if (!relay->done_cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), ended))
            return 0;
        if (status != nullptr)
            *status = relay->call.status;
        if (relay->has_error)
            return 2;  // the slot stays the caller's until it takes the text (ovgenai_relay_take_error)
        free_slot(relay);
        return 1;
    } catch (...) {
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

__attribute__((visibility("default"))) int ovgenai_relay_notify(ovgenai_relay_opaque* relay, int fd) {
    try {
        std::lock_guard<std::mutex> lock(relay->mutex);
        if (relay->slot == Slot::done)
            return 1;
        relay->notify_fd = fd;
        return 0;
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

}  // extern "C"
