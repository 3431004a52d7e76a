#include "common/utf8.hpp"

namespace ovgc {

void utf8_append(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

uint32_t utf8_decode(std::string_view s, size_t i, size_t& len) {
    const auto c = static_cast<unsigned char>(s[i]);
    len = utf8_sequence_length(c);
    if (len == 1) return c < 0x80 ? c : kUtf8Invalid;
    if (i + len > s.size()) {
        len = 1;
        return kUtf8Invalid;
    }
    uint32_t cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len; ++k) {
        const auto cc = static_cast<unsigned char>(s[i + k]);
        if ((cc & 0xC0) != 0x80) {
            len = 1;
            return kUtf8Invalid;
        }
        cp = (cp << 6) | (cc & 0x3F);
    }
    return cp;
}

Utf8Error utf8_decode_strict(std::string_view s, size_t i, uint32_t& cp, size_t& len) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
        cp = c;
        len = 1;
        return Utf8Error::None;
    }
    size_t n;
    uint32_t v;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        v = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        v = c & 0x07;
    } else {
        return Utf8Error::InvalidByte;
    }
    if (i + n > s.size()) return Utf8Error::Truncated;
    for (size_t k = 1; k < n; ++k) {
        const auto cc = static_cast<unsigned char>(s[i + k]);
        if ((cc & 0xC0) != 0x80) return Utf8Error::BadContinuation;
        v = (v << 6) | (cc & 0x3F);
    }
    if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000)) return Utf8Error::Overlong;
    if (v >= 0xD800 && v <= 0xDFFF) return Utf8Error::Surrogate;
    if (v > 0x10FFFF) return Utf8Error::AboveMax;
    cp = v;
    len = n;
    return Utf8Error::None;
}

bool utf8_valid(std::string_view s, size_t* bad_offset) {
    for (size_t i = 0; i < s.size();) {
        if (static_cast<unsigned char>(s[i]) < 0x80) {
            ++i;
            continue;
        }
        uint32_t cp;
        size_t len;
        if (utf8_decode_strict(s, i, cp, len) != Utf8Error::None) {
            if (bad_offset) *bad_offset = i;
            return false;
        }
        i += len;
    }
    return true;
}

size_t utf8_complete_prefix(std::string_view s) {
    const size_t n = s.size();
    // look back at most 3 bytes for a lead byte whose sequence runs past the end
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const auto c = static_cast<unsigned char>(s[n - back]);
        if ((c & 0xC0) == 0x80) continue;  // continuation byte
        return utf8_sequence_length(c) > back ? n - back : n;
    }
    return n;
}

size_t utf8_count(std::string_view s) {
    size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

}  // namespace ovgc
