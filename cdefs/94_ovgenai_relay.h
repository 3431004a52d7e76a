/* NOT an upstream header, and not part of any GenAI library: libovgenai_c_relay.so, a small helper of the binding
   itself (no OpenVINO, no GenAI inside) that works with every library ovgenai_c loads.
   A relay carries one C call at a time from a caller's thread to a pipeline's owner thread and back without the
   Python interpreter lock on either hand-off: the owner thread waits inside ovgenai_relay_serve() and runs the
   posted call there, the caller waits inside ovgenai_relay_wait() (or ovgenai_relay_wait_fd()). The owner's other
   (Python) work is signalled with ovgenai_relay_wake(). Every function may be called from any thread; none blocks
   but serve, wait and wait_fd. */
typedef struct ovgenai_relay_opaque ovgenai_relay;
/* The shape of the calls a relay runs: five pointer arguments, an int status (ov_status_e) back. */
typedef int (*ovgenai_relay_fn)(void*, const void*, const void*, const void*, void*);
/* A library's text for the last failure on the calling thread (ovgenai_c_bundled_last_error), or NULL. */
typedef const char* (*ovgenai_relay_error_fn)(void);
/* A two-call string getter of a call's results (ov_genai_decoded_results_get_string's shape). */
typedef int (*ovgenai_relay_reader_fn)(const void*, char*, size_t*);

/* 0 and *relay set, or -1 (out of memory). */
int ovgenai_relay_create(ovgenai_relay** relay);
/* Frees it; no thread may be inside serve or wait, and no call may be reserved or running. NULL: nothing. In a
   forked child (a process other than the one that made it) nothing is freed: its waits may belong to a thread the
   child does not have. */
void ovgenai_relay_free(ovgenai_relay* relay);

/* Owner side: blocks until woken, running every call posted meanwhile (a reserved or posted call always runs
   before serve returns). Returns 0 once ovgenai_relay_wake() was called since the last return. */
int ovgenai_relay_serve(ovgenai_relay* relay);
/* Make serve return (now, or when it next runs out of calls); reserve() fails from now until it does. */
void ovgenai_relay_wake(ovgenai_relay* relay);

/* Caller side: 1 when the call slot is now the caller's — the owner is waiting in serve, nothing else is queued
   for it and no other call is in the slot —, else 0 (run the call some other way). */
int ovgenai_relay_reserve(ovgenai_relay* relay);
/* Give a reserved slot back unused. */
void ovgenai_relay_unreserve(ovgenai_relay* relay);
/* Run fn(a0, a1, a2, a3, a4) on the owner (the slot must be reserved by this caller). */
void ovgenai_relay_post(ovgenai_relay* relay, ovgenai_relay_fn fn, void* a0, const void* a1, const void* a2,
                        const void* a3, void* a4);
/* ovgenai_relay_post, and once the call has returned 0 the owner reads its results' string form — reader(*a4, buf,
   size), while its caches are warm and before the caller is woken — into the caller's buffer buf of *size bytes:
   *size is then the text's size with its NUL, or (size_t)-1 when it was not read (the call or the reader failed,
   too small a buffer included: read it then yourself). buf and size must live until the call is collected. */
void ovgenai_relay_post_read(ovgenai_relay* relay, ovgenai_relay_fn fn, void* a0, const void* a1, const void* a2,
                             const void* a3, void* a4, ovgenai_relay_reader_fn reader, char* buf, size_t* size);
/* Spinning instead of sleeping (microseconds; 0, the default: never), for when a futex wake-up costs more than a
   short call (tens of microseconds on a VM): after a call that was posted within owner_us of the previous call's
   end, the owner spins up to owner_us for the next call before it sleeps; a caller whose previous call ran for at
   most caller_us spins up to caller_us in wait() for its call's end before it sleeps. */
void ovgenai_relay_set_spin(ovgenai_relay* relay, int owner_us, int caller_us);
/* Where a failed call's text comes from: called on the owner right after a call that returned non-zero (the text
   is thread-local there). NULL (the default): no text. */
void ovgenai_relay_set_error_source(ovgenai_relay* relay, ovgenai_relay_error_fn fn);
/* Wait up to timeout_ms (< 0: no limit) for the posted call's end: 1 and *status = its return value (the slot is
   free again); 2, the same, and the call failed with a text: the slot stays the caller's until
   ovgenai_relay_take_error; or 0 (not ended yet). *status is written before the return (only then), so a caller
   whose wait's return value was lost (an interrupt) finds the outcome there. */
int ovgenai_relay_wait(ovgenai_relay* relay, int timeout_ms, int* status);
/* ovgenai_relay_wait for a thread that must also see signals (Python's main thread): read_fd / write_fd are a
   non-blocking pipe whose write end is Python's signal wakeup fd for the time of the wait. Waits up to timeout_ms
   (< 0: no limit) until the call ends (1 or 2 as wait) or a signal's number arrives in the pipe (-1: it is passed on
   to forward_fd, the wakeup fd that was set before, unless -1; Python's handler runs when the caller is back in
   Python); 0 at the timeout. The pipe is emptied; the call's end writes a zero byte to write_fd meanwhile. */
int ovgenai_relay_wait_fd(ovgenai_relay* relay, int timeout_ms, int* status, int read_fd, int write_fd,
                          int forward_fd);
/* After wait returned 2: copies the failed call's text into buf (at most size - 1 bytes and a NUL), frees the slot
   and returns the text's full length. */
size_t ovgenai_relay_take_error(ovgenai_relay* relay, char* buf, size_t size);
/* 1 when the posted call has ended and its status is not collected yet. */
int ovgenai_relay_done(ovgenai_relay* relay);
/* When the last call that ran ran, on the owner: its start and end on the steady clock (CLOCK_MONOTONIC on Linux,
   Python's time.perf_counter_ns / time.monotonic_ns there), in nanoseconds: 1, or 0 (no call has run). A probe of
   the hand-offs' cost (ovgenai_c_tools.bench.call_handoff). */
int ovgenai_relay_last_call_times(ovgenai_relay* relay, long long* started_ns, long long* ended_ns);
