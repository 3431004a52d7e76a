#pragma once
#include <stdexcept>
#include <string>

namespace ovgc {

// An error carrying the ov_status_e value it must surface as (e.g. -2 NOT_IMPLEMENTED).
class StatusError : public std::runtime_error {
public:
    StatusError(int status, const std::string& what) : std::runtime_error(what), status_(status) {}
    int status() const { return status_; }

private:
    int status_;
};

constexpr int kStatusNotImplemented = -2;
constexpr int kStatusInferCancelled = -13;
constexpr int kStatusUnknownException = -17;

}  // namespace ovgc
