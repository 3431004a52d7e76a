#pragma once
#include <cstddef>
#include <string>

namespace ovgc {

// Length of the longest prefix of s that does not end inside an incomplete UTF-8 sequence.
inline size_t utf8_complete_prefix(const std::string& s) {
    size_t n = s.size();
    // look back at most 3 bytes for a lead byte whose sequence runs past the end
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        unsigned char c = static_cast<unsigned char>(s[n - back]);
        if ((c & 0xC0) == 0x80)
            continue;  // continuation byte
        size_t need = (c & 0x80) == 0 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        return need > back ? n - back : n;
    }
    return n;
}

// Strict UTF-8 validation (no overlongs, no surrogates, max U+10FFFF).
inline bool utf8_valid(const std::string& s, size_t* bad_offset = nullptr) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    size_t n = s.size(), i = 0;
    while (i < n) {
        unsigned char c = p[i];
        size_t len;
        unsigned cp;
        if (c < 0x80) { ++i; continue; }
        else if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
        else { if (bad_offset) *bad_offset = i; return false; }
        if (i + len > n) { if (bad_offset) *bad_offset = i; return false; }
        for (size_t k = 1; k < len; ++k) {
            if ((p[i + k] & 0xC0) != 0x80) { if (bad_offset) *bad_offset = i; return false; }
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF)) {
            if (bad_offset) *bad_offset = i;
            return false;
        }
        i += len;
    }
    return true;
}

}  // namespace ovgc
