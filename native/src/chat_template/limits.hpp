// Limits of one render (call depth, evaluation depth, steps, output size, range()) and the error helpers
// shared by every part of the interpreter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "chat_template/chat_template.hpp"

namespace ovgc {
namespace jinja {

inline constexpr int kMaxCallDepth = 100;
inline constexpr int kMaxEvalDepth = 2000;
inline constexpr uint64_t kMaxSteps = 5'000'000;  // statements + loop iterations + filter calls per render
inline constexpr size_t kMaxOutput = 256u << 20;
inline constexpr int64_t kMaxRange = 100000;

[[noreturn]] inline void fail(const std::string& msg) { throw ChatTemplateError(msg); }

// Work accounting shared by the interpreter and the value helpers: statements, loop iterations and
// proportional charges for bulk work (scans, copies, comparisons), so no template can run for minutes.
// t_steps points at the running render's counter (null outside a render).
extern thread_local uint64_t* t_steps;
void charge(uint64_t n);

}  // namespace jinja
}  // namespace ovgc
