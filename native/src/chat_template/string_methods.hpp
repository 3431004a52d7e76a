// Python str semantics over UTF-8 text: character classes and case mapping, strip/split/replace/title,
// %-formatting and str.format; Interp::str_method (string_methods.cpp) dispatches the str methods on them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chat_template/value.hpp"
#include "common/utf8.hpp"

namespace ovgc {
namespace jinja {

// ---- characters (UTF-8 text, Python's character classes; case mapping for Latin-1, Latin Extended-A, Greek,
// Cyrillic)
bool is_ascii(const std::string& s);
std::vector<size_t> cp_offsets(const std::string& s);
int64_t cp_count(const std::string& s);  // code points
bool py_space(unsigned char c);
// The code point at byte i; an invalid byte decodes as itself (len 1).
uint32_t u8_decode(const std::string& s, size_t i, size_t& len);
bool u_space(uint32_t cp);
uint32_t u_upper_cp(uint32_t c);
uint32_t u_lower_cp(uint32_t c);
bool u_cased(uint32_t c);
std::string u_map(const std::string& s, bool upper);
std::string ascii_upper(const std::string& s);
std::string ascii_lower(const std::string& s);
size_t ws_at(const std::string& s, size_t i);        // length of the whitespace character at byte i, or 0
size_t ws_before(const std::string& s, size_t end);  // length of the whitespace character ending at end, or 0

// ---- Python str operations (chars / sep: null, none or undefined mean whitespace)
std::string py_strip(const std::string& s, const Value* chars, bool left, bool right);
std::vector<std::string> py_split(const std::string& s, const Value* sep, int64_t maxsplit);
std::vector<std::string> py_rsplit(const std::string& s, const Value* sep, int64_t maxsplit);
std::string py_replace(const std::string& s, const std::string& a, const std::string& b, int64_t count);
std::string py_title(const std::string& s);
std::string py_capitalize(const std::string& s);
std::vector<std::string> py_splitlines(const std::string& s, bool keepends);
std::string percent_format(const std::string& fmt, const Value& args);  // fmt % args
std::string brace_format(const std::string& fmt, const CallArgs& a);   // fmt.format(*args, **kwargs)

}  // namespace jinja
}  // namespace ovgc
