// UTF-8 for all of native/: the one encoder, the lenient and the strict decoder, validation and the helpers
// built on them (used by the JSON parser/serialiser, the chat-template engine and the text streamer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ovgc {

// Appends code point `cp` as UTF-8 (cp <= U+10FFFF; surrogates are encoded as given).
void utf8_append(std::string& out, uint32_t cp);

// Length of the sequence a lead byte announces by its bit pattern: 1 for ASCII, 2/3/4 for 110xxxxx/1110xxxx/
// 11110xxx, and 1 for a continuation or an invalid byte.
inline size_t utf8_sequence_length(unsigned char lead) {
    if (lead < 0x80) return 1;
    if ((lead & 0xE0) == 0xC0) return 2;
    if ((lead & 0xF0) == 0xE0) return 3;
    if ((lead & 0xF8) == 0xF0) return 4;
    return 1;
}

inline constexpr uint32_t kUtf8Invalid = 0xFFFFFFFFu;

// Lenient decoding of the code point at byte i (i < s.size()): the sequence utf8_sequence_length announces,
// checked only for its continuation bytes and for running past the end (overlongs, surrogates and values above
// U+10FFFF pass). An ASCII byte decodes as itself; a byte that starts no well-formed sequence gives
// kUtf8Invalid with len 1.
uint32_t utf8_decode(std::string_view s, size_t i, size_t& len);

enum class Utf8Error { None, InvalidByte, Truncated, BadContinuation, Overlong, Surrogate, AboveMax };

// Strict decoding (RFC 3629) of the sequence at byte i: lead bytes C2-DF, E0-EF, F0-F4, no overlongs, no
// surrogates, at most U+10FFFF. On success cp/len are set and Utf8Error::None is returned.
Utf8Error utf8_decode_strict(std::string_view s, size_t i, uint32_t& cp, size_t& len);

// Strict validation of a whole string; on failure *bad_offset (when given) is the offset of the bad sequence.
bool utf8_valid(std::string_view s, size_t* bad_offset = nullptr);

// Length of the longest prefix of s that does not end inside an incomplete UTF-8 sequence.
size_t utf8_complete_prefix(std::string_view s);

// Number of code points: bytes that are not continuation bytes.
size_t utf8_count(std::string_view s);

}  // namespace ovgc
