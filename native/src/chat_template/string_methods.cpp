// Python str semantics (see string_methods.hpp) and the str methods callable from templates (a name -> function
// table).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <ctime>
#include <set>
#include <unordered_map>

#include "chat_template/interp.hpp"
#include "chat_template/string_methods.hpp"

namespace ovgc {
namespace jinja {

// ---------------------------------------------------------------- characters: classes, case mapping, whitespace

bool is_ascii(const std::string& s) {
    for (unsigned char c : s)
        if (c >= 0x80) return false;
    return true;
}

// Byte offsets of each code point, plus the end offset.
std::vector<size_t> cp_offsets(const std::string& s) {
    std::vector<size_t> off;
    off.reserve(s.size() + 1);
    for (size_t i = 0; i < s.size();) {
        off.push_back(i);
        i += utf8_sequence_length(static_cast<unsigned char>(s[i]));
        if (i > s.size()) i = s.size();
    }
    off.push_back(s.size());
    return off;
}

int64_t cp_count(const std::string& s) { return static_cast<int64_t>(utf8_count(s)); }

bool py_space(unsigned char c) { return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F); }

// Decodes the code point at byte i (lenient: an invalid byte decodes as itself with length 1).
uint32_t u8_decode(const std::string& s, size_t i, size_t& len) {
    uint32_t cp = utf8_decode(s, i, len);
    return cp == kUtf8Invalid ? static_cast<unsigned char>(s[i]) : cp;
}

// Python's str.isspace() code points.
bool u_space(uint32_t cp) {
    return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

// Simple case mapping for Latin-1, Latin Extended-A, Greek and Cyrillic (ASCII handled by the caller's fast path).
uint32_t u_upper_cp(uint32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
    if (c == 0xB5) return 0x39C;
    if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 0x20;
    if (c == 0xFF) return 0x178;
    if (c >= 0x100 && c <= 0x17F) {
        if (c == 0x131) return 'I';
        if (c == 0x17F) return 'S';
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 0) ? c - 1 : c;
        if (c == 0x130 || c == 0x138 || c == 0x149) return c;
        return (c % 2 == 1) ? c - 1 : c;
    }
    if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 0x20;
    if (c == 0x3C2) return 0x3A3;
    if (c >= 0x3AC && c <= 0x3AF) return c == 0x3AC ? 0x386 : c - 0x25;
    if (c >= 0x430 && c <= 0x44F) return c - 0x20;
    if (c >= 0x450 && c <= 0x45F) return c - 0x50;
    return c;
}

uint32_t u_lower_cp(uint32_t c) {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;
    if (c == 0x178) return 0xFF;
    if (c >= 0x100 && c <= 0x17F) {
        if (c == 0x130) return 'i';
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 1) ? c + 1 : c;
        if (c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17F) return c;
        return (c % 2 == 0) ? c + 1 : c;
    }
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 0x20;
    if (c == 0x386) return 0x3AC;
    if (c >= 0x388 && c <= 0x38A) return c + 0x25;
    if (c >= 0x410 && c <= 0x42F) return c + 0x20;
    if (c >= 0x400 && c <= 0x40F) return c + 0x50;
    return c;
}

bool u_cased(uint32_t c) { return u_upper_cp(c) != c || u_lower_cp(c) != c || c == 0xDF; }

std::string u_map(const std::string& s, bool upper) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            out += static_cast<char>(upper ? std::toupper(c) : std::tolower(c));
            ++i;
            continue;
        }
        size_t len;
        uint32_t cp = u8_decode(s, i, len);
        if (len == 1) {
            out += static_cast<char>(c);
        } else if (upper && cp == 0xDF) {
            out += "SS";
        } else {
            utf8_append(out, upper ? u_upper_cp(cp) : u_lower_cp(cp));
        }
        i += len;
    }
    return out;
}

std::string ascii_upper(const std::string& s) { return u_map(s, true); }
std::string ascii_lower(const std::string& s) { return u_map(s, false); }

// Length of the (Unicode) whitespace character starting at byte i, 0 if none.
size_t ws_at(const std::string& s, size_t i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) return py_space(c) ? 1 : 0;
    size_t len;
    uint32_t cp = u8_decode(s, i, len);
    return (len > 1 && u_space(cp)) ? len : 0;
}

// Length of the whitespace character ending at byte `end`, 0 if none.
size_t ws_before(const std::string& s, size_t end) {
    if (end == 0) return 0;
    unsigned char c = static_cast<unsigned char>(s[end - 1]);
    if (c < 0x80) return py_space(c) ? 1 : 0;
    size_t b = end - 1;
    while (b > 0 && end - b < 4 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
    size_t len;
    uint32_t cp = u8_decode(s, b, len);
    return (b + len == end && len > 1 && u_space(cp)) ? len : 0;
}

// ---------------------------------------------------------------- Python string methods

std::string py_strip(const std::string& s, const Value* chars, bool left, bool right) {
    size_t b = 0, e = s.size();
    if (!chars || chars->t == Value::None || chars->t == Value::Undef) {
        if (left)
            for (size_t n; b < e && (n = ws_at(s, b)) > 0;) b += n;
        if (right)
            for (size_t n; e > b && (n = ws_before(s, e)) > 0;) e -= n;
        return s.substr(b, e - b);
    }
    if (chars->t != Value::Str) fail("strip arg must be None or str");
    // strip any code point contained in chars
    std::vector<std::string> set;
    for (size_t i = 0; i < chars->s.size();) {
        size_t len;
        u8_decode(chars->s, i, len);
        set.push_back(chars->s.substr(i, len));
        i += len;
    }
    auto starts_with_any = [&](size_t pos) -> size_t {
        for (const auto& c : set)
            if (s.compare(pos, c.size(), c) == 0) return c.size();
        return 0;
    };
    auto ends_with_any = [&](size_t end) -> size_t {
        for (const auto& c : set)
            if (end >= b + c.size() && s.compare(end - c.size(), c.size(), c) == 0) return c.size();
        return 0;
    };
    if (left)
        for (size_t n; b < e && (n = starts_with_any(b)) > 0;) b += n;
    if (right)
        for (size_t n; e > b && (n = ends_with_any(e)) > 0;) e -= n;
    return s.substr(b, e - b);
}

std::vector<std::string> py_split(const std::string& s, const Value* sep, int64_t maxsplit) {
    std::vector<std::string> out;
    if (!sep || sep->t == Value::None || sep->t == Value::Undef) {
        size_t i = 0, n = s.size();
        while (i < n) {
            for (size_t w; i < n && (w = ws_at(s, i)) > 0;) i += w;
            if (i >= n) break;
            if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
                size_t e = n;
                for (size_t w; e > i && (w = ws_before(s, e)) > 0;) e -= w;
                out.push_back(s.substr(i, e - i));
                return out;
            }
            size_t j = i;
            while (j < n && ws_at(s, j) == 0) j += utf8_sequence_length(static_cast<unsigned char>(s[j]));
            if (j > n) j = n;
            out.push_back(s.substr(i, j - i));
            i = j;
        }
        return out;
    }
    if (sep->t != Value::Str) fail("must be str or None");
    const std::string& sp = sep->s;
    if (sp.empty()) fail("empty separator");
    size_t i = 0;
    for (;;) {
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) break;
        size_t j = s.find(sp, i);
        if (j == std::string::npos) break;
        out.push_back(s.substr(i, j - i));
        i = j + sp.size();
    }
    out.push_back(s.substr(i));
    return out;
}

std::vector<std::string> py_rsplit(const std::string& s, const Value* sep, int64_t maxsplit) {
    if (maxsplit < 0) return py_split(s, sep, -1);
    std::vector<std::string> out;
    if (!sep || sep->t == Value::None || sep->t == Value::Undef) {
        size_t i = s.size();
        while (i > 0) {
            for (size_t w; i > 0 && (w = ws_before(s, i)) > 0;) i -= w;
            if (i == 0) break;
            if (static_cast<int64_t>(out.size()) >= maxsplit) {
                size_t b = 0;
                for (size_t w; b < i && (w = ws_at(s, b)) > 0;) b += w;
                out.push_back(s.substr(b, i - b));
                break;
            }
            size_t j = i;
            while (j > 0 && ws_before(s, j) == 0) {
                --j;
                while (j > 0 && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) --j;
            }
            out.push_back(s.substr(j, i - j));
            i = j;
        }
        std::reverse(out.begin(), out.end());
        return out;
    }
    if (sep->t != Value::Str) fail("must be str or None");
    const std::string& sp = sep->s;
    if (sp.empty()) fail("empty separator");
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < maxsplit) {
        if (end < sp.size()) break;
        size_t j = s.rfind(sp, end - sp.size());
        if (j == std::string::npos) break;
        out.push_back(s.substr(j + sp.size(), end - j - sp.size()));
        end = j;
    }
    out.push_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
}

std::string py_replace(const std::string& s, const std::string& a, const std::string& b, int64_t count) {
    if (count == 0) return s;
    {  // size of the result, checked before building it
        int64_t hits = 0;
        if (a.empty()) {
            hits = cp_count(s) + 1;
        } else {
            for (size_t p = s.find(a); p != std::string::npos && (count < 0 || hits < count); p = s.find(a, p + a.size()))
                ++hits;
        }
        if (count >= 0) hits = std::min(hits, count);
        double size = static_cast<double>(s.size()) + static_cast<double>(hits) * (static_cast<double>(b.size()) - static_cast<double>(a.size()));
        if (size > static_cast<double>(kMaxOutput)) fail("result too large");
    }
    std::string out;
    if (a.empty()) {
        // Python inserts b between every character (and at both ends).
        auto off = cp_offsets(s);
        int64_t done = 0;
        for (size_t k = 0; k + 1 < off.size(); ++k) {
            if (count < 0 || done < count) {
                out += b;
                ++done;
            }
            out.append(s, off[k], off[k + 1] - off[k]);
        }
        if (count < 0 || done < count) out += b;
        return out;
    }
    size_t i = 0;
    int64_t done = 0;
    for (;;) {
        if (count >= 0 && done >= count) break;
        size_t j = s.find(a, i);
        if (j == std::string::npos) break;
        out.append(s, i, j - i);
        out += b;
        i = j + a.size();
        ++done;
    }
    out.append(s, i, std::string::npos);
    return out;
}

std::string py_title(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    bool prev_cased = false;
    for (size_t i = 0; i < s.size();) {
        size_t len;
        uint32_t cp = u8_decode(s, i, len);
        if (len == 1 && cp >= 0x80) {  // invalid byte: copy
            out += s[i];
            prev_cased = false;
        } else if (u_cased(cp)) {
            std::string one = s.substr(i, len);
            out += u_map(one, !prev_cased);
            prev_cased = true;
        } else {
            out.append(s, i, len);
            prev_cased = false;
        }
        i += len;
    }
    return out;
}

std::string py_capitalize(const std::string& s) {
    if (s.empty()) return s;
    size_t len;
    u8_decode(s, 0, len);
    return u_map(s.substr(0, len), true) + u_map(s.substr(len), false);
}

std::vector<std::string> py_splitlines(const std::string& s, bool keepends) {
    std::vector<std::string> out;
    size_t i = 0, n = s.size(), start = 0;
    while (i < n) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        size_t eol = 0;
        if (c == '\r' && i + 1 < n && s[i + 1] == '\n') eol = 2;
        else if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1C && c <= 0x1E)) eol = 1;
        else if (c == 0xC2 && i + 1 < n && static_cast<unsigned char>(s[i + 1]) == 0x85) eol = 2;
        else if (c == 0xE2 && i + 2 < n && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
                 (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9))
            eol = 3;
        if (eol) {
            out.push_back(s.substr(start, (keepends ? i + eol : i) - start));
            i += eol;
            start = i;
        } else {
            ++i;
        }
    }
    if (start < n) out.push_back(s.substr(start));
    return out;
}

// printf-style formatting used by `str % args` and the format filter.
std::string percent_format(const std::string& fmt, const Value& args) {
    std::vector<Value> list;
    const DictData* mapping = nullptr;
    // Python: a tuple supplies positional args; any other object is one arg. Objects with __getitem__ (list, dict)
    // count as mappings, so unconsumed ones are not an error.
    bool lenient = false;
    if (args.t == Value::List && args.tup) list = *args.l;
    else if (args.t == Value::Dict && !args.d->ns) mapping = args.d.get(), list.push_back(args), lenient = true;
    else list.push_back(args), lenient = args.t == Value::List;
    size_t ai = 0;
    std::string out;
    for (size_t i = 0; i < fmt.size(); ++i) {
        char c = fmt[i];
        if (c != '%') {
            out += c;
            continue;
        }
        if (++i >= fmt.size()) fail("incomplete format");
        if (fmt[i] == '%') {
            out += '%';
            continue;
        }
        const Value* arg = nullptr;
        if (fmt[i] == '(') {
            size_t e = fmt.find(')', i);
            if (e == std::string::npos || !mapping) fail("format requires a mapping");
            std::string key = fmt.substr(i + 1, e - i - 1);
            arg = mapping->find(key);
            if (!arg) fail("KeyError: " + py_repr_str(key));
            i = e + 1;
        }
        std::string flags;
        while (i < fmt.size() && std::strchr("-+ #0", fmt[i])) flags += fmt[i++];
        std::string width, prec;
        while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) width += fmt[i++];
        bool has_prec = false;
        if (i < fmt.size() && fmt[i] == '.') {
            has_prec = true;
            ++i;
            while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) prec += fmt[i++];
        }
        if (i >= fmt.size()) fail("incomplete format");
        char conv = fmt[i];
        if (!arg) {
            if (ai >= list.size()) fail("not enough arguments for format string");
            arg = &list[ai++];
        }
        std::string piece;
        switch (conv) {
            case 's': piece = to_str(*arg); if (has_prec) piece = piece.substr(0, std::stoul(prec.empty() ? "0" : prec)); break;
            case 'r': case 'a': piece = repr(*arg); break;
            case 'd': case 'i': case 'u':
                if (!is_num(*arg)) fail("%d format: a real number is required, not " + std::string(type_name(*arg)));
                if (arg->t == Value::Float && !(std::fabs(arg->f) < 9.2e18)) {
                    char buf[400];
                    std::snprintf(buf, sizeof buf, "%.0f", std::trunc(arg->f));
                    piece = buf;
                } else {
                    piece = std::to_string(arg->t == Value::Float ? static_cast<int64_t>(arg->f) : as_i(*arg));
                }
                break;
            case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': {
                if (!is_num(*arg)) fail("must be real number, not " + std::string(type_name(*arg)));
                std::string spec = "%" + flags + (has_prec ? "." + (prec.empty() ? std::string("0") : prec) : "") + conv;
                char buf[512];
                std::snprintf(buf, sizeof buf, spec.c_str(), as_f(*arg));
                piece = buf;
                break;
            }
            case 'x': case 'X': case 'o': {
                if (!is_intlike(*arg)) fail("%x format: an integer is required");
                char buf[64];
                std::string spec = std::string("%ll") + conv;
                std::snprintf(buf, sizeof buf, spec.c_str(), static_cast<long long>(as_i(*arg)));
                piece = buf;
                break;
            }
            default: fail(std::string("unsupported format character '") + conv + "'");
        }
        if (!width.empty()) {
            if (width.size() > 9 || std::stoul(width) > kMaxOutput) fail("result too large");
            size_t w = std::stoul(width);
            size_t len = static_cast<size_t>(cp_count(piece));
            if (len < w) {
                if (flags.find('-') != std::string::npos) piece += std::string(w - len, ' ');
                else piece = std::string(w - len, flags.find('0') != std::string::npos && conv != 's' ? '0' : ' ') + piece;
            }
        }
        out += piece;
    }
    if (ai < list.size() && !lenient) fail("not all arguments converted during string formatting");
    return out;
}

// str.format with {} / {0} / {name} fields and simple specs.
std::string brace_format(const std::string& fmt, const CallArgs& a) {
    std::string out;
    size_t auto_idx = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        char c = fmt[i];
        if (c == '{') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
                out += '{';
                ++i;
                continue;
            }
            size_t e = fmt.find('}', i);
            if (e == std::string::npos) fail("Single '{' encountered in format string");
            std::string field = fmt.substr(i + 1, e - i - 1);
            std::string spec;
            size_t colon = field.find(':');
            if (colon != std::string::npos) {
                spec = field.substr(colon + 1);
                field = field.substr(0, colon);
            }
            const Value* v = nullptr;
            if (field.empty()) {
                if (auto_idx >= a.pos.size()) fail("Replacement index out of range for positional args tuple");
                v = &a.pos[auto_idx++];
            } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
                size_t k = std::stoul(field);
                if (k >= a.pos.size()) fail("Replacement index out of range for positional args tuple");
                v = &a.pos[k];
            } else {
                for (const auto& kv : a.kw)
                    if (kv.first == field) v = &kv.second;
                if (!v) fail("KeyError: " + py_repr_str(field));
            }
            if (spec.empty()) {
                out += to_str(*v);
            } else {
                // support [.N]f / d / s (enough for chat templates)
                std::string conv = "%" + spec;
                char last = spec.back();
                if (last == 'f' || last == 'e' || last == 'g') {
                    char buf[512];
                    std::snprintf(buf, sizeof buf, conv.c_str(), as_f(*v));
                    out += buf;
                } else if (last == 'd') {
                    char buf[128];
                    conv.pop_back();
                    conv += "lld";
                    std::snprintf(buf, sizeof buf, conv.c_str(), static_cast<long long>(as_i(*v)));
                    out += buf;
                } else {
                    out += to_str(*v);
                }
            }
            i = e;
        } else if (c == '}') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
            out += '}';
        } else {
            out += c;
        }
    }
    return out;
}

// ---------------------------------------------------------------- str methods

namespace {

// One str method: fn(the name it was called by, the string, the arguments).
using StrMethodFn = Value (*)(const std::string&, const std::string&, CallArgs&);

const std::string& need_str(const std::string& name, const CallArgs& a, size_t idx, const char* nm) {
    const Value* v = arg_at(a, idx, nm);
    if (!v) fail(name + "() missing required argument");
    if (v->t != Value::Str) fail(name + "() argument must be str, not " + type_name(*v));
    return v->s;
}

int64_t opt_int(const CallArgs& a, size_t idx, const char* nm, int64_t d) {
    const Value* v = arg_at(a, idx, nm);
    if (!v || v->t == Value::None) return d;
    if (!is_intlike(*v)) fail(std::string("'") + type_name(*v) + "' object cannot be interpreted as an integer");
    return as_i(*v);
}

template <class Pred>
Value all_of(const std::string& s, Pred pred) {
    if (s.empty()) return Value::boolean(false);
    for (unsigned char c : s)
        if (!pred(c)) return Value::boolean(false);
    return Value::boolean(true);
}

// Python str methods a template may name but the renderer does not implement (calling one fails).
Value m_unsupported(const std::string& name, const std::string&, CallArgs&) {
    fail("str method '" + name + "' is not supported");
}

// startswith, endswith
Value m_startswith(const std::string& name, const std::string& s, CallArgs& a) {
    const Value* p = arg_at(a, 0, "prefix");
    if (!p) fail(name + "() takes at least 1 argument (0 given)");
    std::string sub = s;
    if (a.pos.size() > 1) {
        Value st = a.pos[1];
        Value en = a.pos.size() > 2 ? a.pos[2] : Value::none();
        sub = do_slice(Value::str(s), &st, &en, nullptr).s;
    }
    auto test = [&](const std::string& x) {
        if (name == "startswith") return sub.compare(0, x.size(), x) == 0 && sub.size() >= x.size();
        return sub.size() >= x.size() && sub.compare(sub.size() - x.size(), x.size(), x) == 0;
    };
    if (p->t == Value::Str) return Value::boolean(test(p->s));
    if (p->t == Value::List) {
        for (const auto& e : *p->l) {
            if (e.t != Value::Str) fail("tuple for " + name + " must only contain str");
            if (test(e.s)) return Value::boolean(true);
        }
        return Value::boolean(false);
    }
    fail(name + " first arg must be str or a tuple of str, not " + type_name(*p));
}

// strip
Value m_strip(const std::string& name, const std::string& s, CallArgs& a) {
    return Value::str(py_strip(s, arg_at(a, 0, "chars"), true, true));
}

// lstrip
Value m_lstrip(const std::string& name, const std::string& s, CallArgs& a) {
    return Value::str(py_strip(s, arg_at(a, 0, "chars"), true, false));
}

// rstrip
Value m_rstrip(const std::string& name, const std::string& s, CallArgs& a) {
    return Value::str(py_strip(s, arg_at(a, 0, "chars"), false, true));
}

// split, rsplit
Value m_split(const std::string& name, const std::string& s, CallArgs& a) {
    const Value* sep = arg_at(a, 0, "sep");
    int64_t mx = opt_int(a, 1, "maxsplit", -1);
    auto parts = name == "split" ? py_split(s, sep, mx) : py_rsplit(s, sep, mx);
    std::vector<Value> out;
    out.reserve(parts.size());
    for (auto& p : parts) out.push_back(Value::str(std::move(p)));
    return Value::list(std::move(out));
}

// splitlines
Value m_splitlines(const std::string& name, const std::string& s, CallArgs& a) {
    auto parts = py_splitlines(s, arg_bool(a, 0, "keepends", false));
    std::vector<Value> out;
    for (auto& p : parts) out.push_back(Value::str(std::move(p)));
    return Value::list(std::move(out));
}

// replace
Value m_replace(const std::string& name, const std::string& s, CallArgs& a) {
    const std::string& o = need_str(name, a, 0, "old");
    const std::string& nw = need_str(name, a, 1, "new");
    return Value::str(py_replace(s, o, nw, opt_int(a, 2, "count", -1)));
}

// upper
Value m_upper(const std::string& name, const std::string& s, CallArgs& a) {
    return Value::str(ascii_upper(s));
}

// lower, casefold
Value m_lower(const std::string& name, const std::string& s, CallArgs& a) {
    return Value::str(ascii_lower(s));
}

// title
Value m_title(const std::string& name, const std::string& s, CallArgs& a) {
    return Value::str(py_title(s));
}

// capitalize
Value m_capitalize(const std::string& name, const std::string& s, CallArgs& a) {
    return Value::str(py_capitalize(s));
}

// swapcase
Value m_swapcase(const std::string& name, const std::string& s, CallArgs& a) {
    std::string o = s;
    for (auto& c : o) {
        unsigned char u = static_cast<unsigned char>(c);
        c = static_cast<char>(std::isupper(u) ? std::tolower(u) : std::toupper(u));
    }
    return Value::str(o);
}

// find, rfind, index, rindex, count
Value m_find_family(const std::string& name, const std::string& s, CallArgs& a) {
    const std::string& sub = need_str(name, a, 0, "sub");
    // code-point based positions
    std::string hay = s;
    int64_t base = 0;
    if (a.pos.size() > 1) {
        Value st = a.pos[1];
        Value en = a.pos.size() > 2 ? a.pos[2] : Value::none();
        hay = do_slice(Value::str(s), &st, &en, nullptr).s;
        int64_t len = cp_count(s);
        int64_t b = as_i(st);
        if (b < 0) b = std::max<int64_t>(0, b + len);
        base = std::min(b, len);
    }
    if (name == "count") {
        if (sub.empty()) return Value::integer(cp_count(hay) + 1);
        int64_t c = 0;
        for (size_t p = hay.find(sub); p != std::string::npos; p = hay.find(sub, p + sub.size())) ++c;
        return Value::integer(c);
    }
    size_t p = (name == "find" || name == "index") ? hay.find(sub) : hay.rfind(sub);
    if (p == std::string::npos) {
        if (name == "index" || name == "rindex") fail("substring not found");
        return Value::integer(-1);
    }
    return Value::integer(base + cp_count(hay.substr(0, p)));
}

// join
Value m_join(const std::string& name, const std::string& s, CallArgs& a) {
    const Value* it = arg_at(a, 0, "iterable");
    if (!it) fail("join() takes exactly one argument");
    std::string out;
    bool first = true;
    for (const auto& e : iterate(*it)) {
        if (e.t != Value::Str) fail(std::string("sequence item: expected str instance, ") + type_name(e) + " found");
        if (!first) out += s;
        first = false;
        out += e.s;
        if (out.size() > kMaxOutput) fail("result too large");
    }
    return Value::str(out);
}

// format
Value m_format(const std::string& name, const std::string& s, CallArgs& a) {
    return Value::str(brace_format(s, a));
}

// isdigit, isnumeric, isdecimal
Value m_isdigit_family(const std::string& name, const std::string& s, CallArgs& a) {
    return all_of(s, [](unsigned char c) { return std::isdigit(c) != 0; });
}

// isalpha
Value m_isalpha(const std::string& name, const std::string& s, CallArgs& a) {
    return all_of(s, [](unsigned char c) { return std::isalpha(c) != 0 || c >= 0x80; });
}

// isalnum
Value m_isalnum(const std::string& name, const std::string& s, CallArgs& a) {
    return all_of(s, [](unsigned char c) { return std::isalnum(c) != 0 || c >= 0x80; });
}

// isspace
Value m_isspace(const std::string& name, const std::string& s, CallArgs& a) {
    return all_of(s, [](unsigned char c) { return py_space(c); });
}

// isascii
Value m_isascii(const std::string& name, const std::string& s, CallArgs& a) {
    for (unsigned char c : s)
        if (c >= 0x80) return Value::boolean(false);
    return Value::boolean(true);
}

// isupper, islower
Value m_isupper_lower(const std::string& name, const std::string& s, CallArgs& a) {
    bool any = false;
    for (unsigned char c : s) {
        if (std::isalpha(c)) {
            any = true;
            if (name == "isupper" ? std::islower(c) : std::isupper(c)) return Value::boolean(false);
        }
    }
    return Value::boolean(any);
}

// removeprefix
Value m_removeprefix(const std::string& name, const std::string& s, CallArgs& a) {
    const std::string& p = need_str(name, a, 0, "prefix");
    return Value::str(s.compare(0, p.size(), p) == 0 && s.size() >= p.size() ? s.substr(p.size()) : s);
}

// removesuffix
Value m_removesuffix(const std::string& name, const std::string& s, CallArgs& a) {
    const std::string& p = need_str(name, a, 0, "suffix");
    if (!p.empty() && s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0)
        return Value::str(s.substr(0, s.size() - p.size()));
    return Value::str(s);
}

// partition, rpartition
Value m_partition(const std::string& name, const std::string& s, CallArgs& a) {
    const std::string& sep = need_str(name, a, 0, "sep");
    if (sep.empty()) fail("empty separator");
    size_t p = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (p == std::string::npos) {
        if (name == "partition") return tuple({Value::str(s), Value::str(""), Value::str("")});
        return tuple({Value::str(""), Value::str(""), Value::str(s)});
    }
    return tuple({Value::str(s.substr(0, p)), Value::str(sep), Value::str(s.substr(p + sep.size()))});
}

// center, ljust, rjust, zfill
Value m_center_family(const std::string& name, const std::string& s, CallArgs& a) {
    int64_t w = opt_int(a, 0, "width", 0);
    int64_t len = cp_count(s);
    if (w <= len) return Value::str(s);
    if (w - len > static_cast<int64_t>(kMaxOutput)) fail("result too large");
    size_t pad = static_cast<size_t>(w - len);
    if (name == "zfill") {
        if (!s.empty() && (s[0] == '-' || s[0] == '+')) return Value::str(s.substr(0, 1) + std::string(pad, '0') + s.substr(1));
        return Value::str(std::string(pad, '0') + s);
    }
    std::string fill = " ";
    if (const Value* f = arg_at(a, 1, "fillchar")) fill = f->s;
    auto rep = [&](size_t n) {
        std::string o;
        for (size_t k = 0; k < n; ++k) o += fill;
        return o;
    };
    if (name == "ljust") return Value::str(s + rep(pad));
    if (name == "rjust") return Value::str(rep(pad) + s);
    size_t left = pad / 2 + (pad & static_cast<size_t>(w) & 1);
    return Value::str(rep(left) + s + rep(pad - left));
}

// name -> implementation: exactly the names Interp::is_str_method recognises.
const std::unordered_map<std::string, StrMethodFn>& str_methods() {
    static const std::unordered_map<std::string, StrMethodFn> table = {
        {"startswith", m_startswith},
        {"endswith", m_startswith},
        {"strip", m_strip},
        {"lstrip", m_lstrip},
        {"rstrip", m_rstrip},
        {"split", m_split},
        {"rsplit", m_split},
        {"splitlines", m_splitlines},
        {"replace", m_replace},
        {"upper", m_upper},
        {"lower", m_lower},
        {"casefold", m_lower},
        {"title", m_title},
        {"capitalize", m_capitalize},
        {"swapcase", m_swapcase},
        {"find", m_find_family},
        {"rfind", m_find_family},
        {"index", m_find_family},
        {"rindex", m_find_family},
        {"count", m_find_family},
        {"join", m_join},
        {"format", m_format},
        {"isdigit", m_isdigit_family},
        {"isnumeric", m_isdigit_family},
        {"isdecimal", m_isdigit_family},
        {"isalpha", m_isalpha},
        {"isalnum", m_isalnum},
        {"isspace", m_isspace},
        {"isascii", m_isascii},
        {"isupper", m_isupper_lower},
        {"islower", m_isupper_lower},
        {"removeprefix", m_removeprefix},
        {"removesuffix", m_removesuffix},
        {"partition", m_partition},
        {"rpartition", m_partition},
        {"center", m_center_family},
        {"ljust", m_center_family},
        {"rjust", m_center_family},
        {"zfill", m_center_family},
        {"format_map", m_unsupported},
        {"encode", m_unsupported},
        {"expandtabs", m_unsupported},
        {"istitle", m_unsupported},
        {"isidentifier", m_unsupported},
        {"isprintable", m_unsupported},
        {"maketrans", m_unsupported},
        {"translate", m_unsupported},
    };
    return table;
}

}  // namespace

bool Interp::is_str_method(const std::string& n) { return str_methods().count(n) != 0; }

Value Interp::str_method(const std::string& s, const std::string& name, CallArgs& a) {
    charge(s.size() / 256);
    const auto& table = str_methods();
    auto it = table.find(name);
    if (it == table.end()) fail("str method '" + name + "' is not supported");
    return it->second(name, s, a);
}

}  // namespace jinja
}  // namespace ovgc
