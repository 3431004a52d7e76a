// A readiness signal for event loops: a non-blocking pipe whose read end becomes readable each time ring() is
// called (the batching engine rings after every step, once that step's tokens, text and statuses are published).
// A reader drains the pipe first, then looks at what changed: a ring that comes after the drain leaves a byte
// behind, so nothing is missed. Closing (the destructor) closes both ends: a reader holding a dup() of the read
// end then sees end of file. POSIX only.
#pragma once

namespace ovgc {

class StepSignal {
public:
    StepSignal();  // throws std::system_error when no pipe can be made
    ~StepSignal();
    StepSignal(const StepSignal&) = delete;
    StepSignal& operator=(const StepSignal&) = delete;

    int read_fd() const { return fds_[0]; }
    // One byte into the pipe; a full pipe already wakes its reader, so EAGAIN is not an error. noexcept.
    void ring() const noexcept;

private:
    int fds_[2] = {-1, -1};
};

}  // namespace ovgc
