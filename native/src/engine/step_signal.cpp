#include "engine/step_signal.hpp"

#include <cerrno>
#include <fcntl.h>
#include <system_error>
#include <unistd.h>

namespace ovgc {

namespace {

void set_flags(int fd) {
    const int fl = ::fcntl(fd, F_GETFL);
    const int fd_fl = ::fcntl(fd, F_GETFD);
    if (fl < 0 || fd_fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || ::fcntl(fd, F_SETFD, fd_fl | FD_CLOEXEC) < 0)
        throw std::system_error(errno, std::generic_category(), "fcntl on the step signal pipe");
}

}  // namespace

StepSignal::StepSignal() {
    if (::pipe(fds_) != 0)
        throw std::system_error(errno, std::generic_category(), "pipe() for the step signal");
    try {
        set_flags(fds_[0]);
        set_flags(fds_[1]);
    } catch (...) {
        ::close(fds_[0]);
        ::close(fds_[1]);
        throw;
    }
}

StepSignal::~StepSignal() {
    ::close(fds_[1]);  // the writer first: a reader's dup() sees end of file
    ::close(fds_[0]);
}

void StepSignal::ring() const noexcept {
    const char byte = 1;
    ssize_t n;
    do {
        n = ::write(fds_[1], &byte, 1);
    } while (n < 0 && errno == EINTR);
}

}  // namespace ovgc
