// Tree-walking interpreter for the parsed Jinja2 template, with Python/jinja2 value semantics.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <ctime>
#include <set>

#include "chat_template/jinja_internal.hpp"

namespace ovgc {
namespace jinja {

// ---------------------------------------------------------------- bounded-depth destruction

namespace {
thread_local int t_release_depth = 0;
thread_local std::vector<std::shared_ptr<void>>* t_deferred = nullptr;
}  // namespace

void Value::release() noexcept {
    if (t_release_depth >= 64) {
        // too deep: hand the containers to the outermost release, which frees them iteratively
        try {
            if (!t_deferred) t_deferred = new std::vector<std::shared_ptr<void>>();
            if (l) t_deferred->push_back(std::move(l));
            if (d) t_deferred->push_back(std::move(d));
            if (fn) t_deferred->push_back(std::move(fn));
            return;
        } catch (...) {
            // out of memory: fall through and release recursively
        }
    }
    ++t_release_depth;
    l.reset();
    d.reset();
    fn.reset();
    --t_release_depth;
    if (t_release_depth == 0 && t_deferred) {
        ++t_release_depth;
        while (!t_deferred->empty()) {
            std::shared_ptr<void> p = std::move(t_deferred->back());
            t_deferred->pop_back();
            p.reset();  // may defer more; the loop picks them up
        }
        --t_release_depth;
        delete t_deferred;
        t_deferred = nullptr;
    }
}

namespace {

constexpr int kMaxCallDepth = 100;
constexpr int kMaxEvalDepth = 2000;
constexpr uint64_t kMaxSteps = 5'000'000;  // statements + loop iterations + filter calls per render
constexpr size_t kMaxOutput = 256u << 20;
constexpr int64_t kMaxRange = 100000;

[[noreturn]] void fail(const std::string& msg) { throw ChatTemplateError(msg); }

// Work accounting shared by the interpreter and the value helpers: statements, loop iterations and
// proportional charges for bulk work (scans, copies, comparisons), so no template can run for minutes.
thread_local uint64_t* t_steps = nullptr;
void charge(uint64_t n) {
    if (t_steps && (*t_steps += n) > kMaxSteps) fail("template exceeded the execution step limit");
}

// ---------------------------------------------------------------- UTF-8 helpers

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

// ---------------------------------------------------------------- basic value ops

const char* type_name(const Value& v) {
    switch (v.t) {
        case Value::Undef: return "Undefined";
        case Value::None: return "NoneType";
        case Value::Bool: return "bool";
        case Value::Int: return "int";
        case Value::Float: return "float";
        case Value::Str: return "str";
        case Value::List: return "list";
        case Value::Dict: return v.d->ns ? "Namespace" : v.d->loop ? "LoopContext" : "dict";
        case Value::Fn: return "function";
    }
    return "object";
}

std::string obj_type_repr(const Value& v) {
    if (v.t == Value::None) return "None";
    return std::string(type_name(v)) + " object";
}

[[noreturn]] void undefined_error(const Value& u) { fail(u.s.empty() ? "value is undefined" : u.s); }

// Guards recursive walks over values (repr, equality, ordering), which may be deeply nested or cyclic
// (a namespace can contain itself).
thread_local int t_walk_depth = 0;
struct WalkGuard {
    WalkGuard() {
        if (++t_walk_depth > 500) {
            --t_walk_depth;
            fail("value nested too deeply");
        }
    }
    ~WalkGuard() { --t_walk_depth; }
    WalkGuard(const WalkGuard&) = delete;
    WalkGuard& operator=(const WalkGuard&) = delete;
};

bool truthy(const Value& v) {
    switch (v.t) {
        case Value::Undef: return false;
        case Value::None: return false;
        case Value::Bool: return v.b;
        case Value::Int: return v.i != 0;
        case Value::Float: return v.f != 0.0;
        case Value::Str: return !v.s.empty();
        case Value::List: return v.b || !v.l->empty();
        case Value::Dict: return v.d->ns || v.d->loop || !v.d->items.empty();
        case Value::Fn: return true;
    }
    return false;
}

bool is_num(const Value& v) { return v.t == Value::Int || v.t == Value::Float || v.t == Value::Bool; }
bool is_intlike(const Value& v) { return v.t == Value::Int || v.t == Value::Bool; }
int64_t as_i(const Value& v) { return v.t == Value::Bool ? (v.b ? 1 : 0) : v.i; }
double as_f(const Value& v) {
    if (v.t == Value::Float) return v.f;
    return static_cast<double>(as_i(v));
}

// Dict keys are stored as strings; non-string keys (int, float, bool, None) are encoded with a \x01 prefix.
std::string key_enc(const Value& k) {
    switch (k.t) {
        case Value::Str: return k.s;
        case Value::Int: return "\x01i" + std::to_string(k.i);
        case Value::Bool: return std::string("\x01i") + (k.b ? "1" : "0");
        case Value::Float:
            if (std::isfinite(k.f) && k.f == std::floor(k.f) && std::fabs(k.f) < 9e18)
                return "\x01i" + std::to_string(static_cast<int64_t>(k.f));
            return "\x01" "f" + json_format_double(k.f);
        case Value::None: return "\x01n";
        case Value::Undef: undefined_error(k);
        default: break;
    }
    fail(std::string("unhashable type: '") + type_name(k) + "'");
}

Value key_dec(const std::string& s) {
    if (s.empty() || s[0] != '\x01') return Value::str(s);
    if (s.size() >= 2 && s[1] == 'i') return Value::integer(std::stoll(s.substr(2)));
    if (s.size() >= 2 && s[1] == 'f') return Value::flt(std::stod(s.substr(2)));
    if (s.size() >= 2 && s[1] == 'n') return Value::none();
    return Value::str(s);
}

// json.dumps converts non-string keys: 1 -> "1", 1.5 -> "1.5", None -> "null".
std::string key_json(const std::string& s) {
    if (s.empty() || s[0] != '\x01') return s;
    Value k = key_dec(s);
    if (k.t == Value::None) return "null";
    if (k.t == Value::Int) return std::to_string(k.i);
    return json_format_double(k.f);
}

// Lists flagged as generators (results of map/select/... like jinja2's lazy filters) reuse the `b` field.
Value gen(std::vector<Value> items) {
    Value v = Value::list(std::move(items));
    v.b = true;
    return v;
}
bool is_gen(const Value& v) { return v.t == Value::List && v.b; }
Value tuple(std::vector<Value> items) {
    Value v = Value::list(std::move(items));
    v.tup = true;
    return v;
}

// markupsafe.Markup is modelled as a Str with the `b` flag set.
Value markup(std::string s) {
    Value v = Value::str(std::move(s));
    v.b = true;
    return v;
}
bool is_markup(const Value& v) { return v.t == Value::Str && v.b; }

std::string html_escape(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

std::string py_repr_str(const std::string& s) {
    bool has_sq = s.find('\'') != std::string::npos, has_dq = s.find('"') != std::string::npos;
    char q = (has_sq && !has_dq) ? '"' : '\'';
    std::string out(1, q);
    static const char* hex = "0123456789abcdef";
    for (unsigned char c : s) {
        if (c == static_cast<unsigned char>(q) || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += static_cast<char>(c);
        }
    }
    out += q;
    return out;
}

// Python's repr escapes non-printable code points (Cc, Cf, Zs except space, Zl, Zp, Co, ...).
bool u_nonprintable(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0xA0) || cp == 0xAD || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) ||
           (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x206F) ||
           cp == 0x3000 || cp == 0xFEFF || (cp >= 0xD800 && cp <= 0xF8FF) || (cp >= 0xFFF9 && cp <= 0xFFFB) ||
           cp == 0x61C || cp == 0x180E || (cp >= 0xF0000);
}

std::string py_repr_unicode(const std::string& s) {
    std::string r = py_repr_str(s);
    if (is_ascii(r)) return r;
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (size_t i = 0; i < r.size();) {
        size_t len;
        uint32_t cp = u8_decode(r, i, len);
        if (len > 1 && u_nonprintable(cp)) {
            int digits = cp <= 0xFF ? 2 : cp <= 0xFFFF ? 4 : 8;
            out += digits == 2 ? "\\x" : digits == 4 ? "\\u" : "\\U";
            for (int k = digits - 1; k >= 0; --k) out += hex[(cp >> (4 * k)) & 15];
        } else {
            out.append(r, i, len);
        }
        i += len;
    }
    return out;
}

std::string to_str(const Value& v);

std::string repr(const Value& v) {
    switch (v.t) {
        case Value::Str: return py_repr_unicode(v.s);
        case Value::Undef: return "Undefined";
        default: return to_str(v);
    }
}

std::string to_str(const Value& v) {
    WalkGuard guard;
    if (v.t == Value::List) charge(v.l->size() / 16);
    if (v.t == Value::Dict) charge(v.d->items.size() / 16);
    switch (v.t) {
        case Value::Undef: return "";
        case Value::None: return "None";
        case Value::Bool: return v.b ? "True" : "False";
        case Value::Int: return std::to_string(v.i);
        case Value::Float: return json_format_double(v.f);
        case Value::Str: return v.s;
        case Value::List: {
            if (v.b) return "<generator object>";
            std::string out = v.tup ? "(" : "[";
            for (size_t k = 0; k < v.l->size(); ++k) {
                if (k) out += ", ";
                out += repr((*v.l)[k]);
            }
            if (v.tup && v.l->size() == 1) out += ",";
            return out + (v.tup ? ")" : "]");
        }
        case Value::Dict: {
            std::string out = v.d->ns ? "<Namespace {" : "{";
            bool first = true;
            for (const auto& kv : v.d->items) {
                if (!first) out += ", ";
                first = false;
                out += repr(key_dec(kv.first)) + ": " + repr(kv.second);
            }
            return out + (v.d->ns ? "}>" : "}");
        }
        case Value::Fn: return "<function " + v.fn->name + ">";
    }
    return "";
}

bool equals(const Value& a, const Value& b) {
    WalkGuard guard;
    if (a.t == Value::Str && b.t == Value::Str) charge(std::min(a.s.size(), b.s.size()) / 1024);
    if (a.t == Value::List && b.t == Value::List) charge(std::min(a.l->size(), b.l->size()) / 16);
    if (is_num(a) && is_num(b)) {
        if (is_intlike(a) && is_intlike(b)) return as_i(a) == as_i(b);
        return as_f(a) == as_f(b);
    }
    if (a.t != b.t) return false;
    switch (a.t) {
        case Value::Undef:
        case Value::None: return true;
        case Value::Str: return a.s == b.s;
        case Value::List: {
            if (a.b || b.b) return a.l == b.l;
            if (a.tup != b.tup) return false;
            if (a.l->size() != b.l->size()) return false;
            for (size_t k = 0; k < a.l->size(); ++k)
                if (!equals((*a.l)[k], (*b.l)[k])) return false;
            return true;
        }
        case Value::Dict: {
            if (a.d == b.d) return true;
            if (a.d->ns || b.d->ns || a.d->loop || b.d->loop) return false;
            if (a.d->items.size() != b.d->items.size()) return false;
            for (const auto& kv : a.d->items) {
                const Value* o = b.d->find(kv.first);
                if (!o || !equals(kv.second, *o)) return false;
            }
            return true;
        }
        case Value::Fn: return a.fn == b.fn;
        default: return false;
    }
}

// Python's `<`; returns -1/0/1, throws on incompatible types.
int compare(const Value& a, const Value& b, const char* op = "<") {
    WalkGuard guard;
    if (a.t == Value::Undef) undefined_error(a);
    if (b.t == Value::Undef) undefined_error(b);
    if (is_num(a) && is_num(b)) {
        if (is_intlike(a) && is_intlike(b)) {
            int64_t x = as_i(a), y = as_i(b);
            return x < y ? -1 : x > y ? 1 : 0;
        }
        double x = as_f(a), y = as_f(b);
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.t == Value::Str && b.t == Value::Str) {
        int c = a.s.compare(b.s);
        return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    if (a.t == Value::List && b.t == Value::List && a.tup == b.tup && !a.b && !b.b) {
        size_t n = std::min(a.l->size(), b.l->size());
        for (size_t k = 0; k < n; ++k) {
            if (!equals((*a.l)[k], (*b.l)[k])) return compare((*a.l)[k], (*b.l)[k], op);
        }
        return a.l->size() < b.l->size() ? -1 : a.l->size() > b.l->size() ? 1 : 0;
    }
    fail(std::string("'") + op + "' not supported between instances of '" + type_name(a) + "' and '" +
         type_name(b) + "'");
}

Value from_json(const JsonValue& j) {
    WalkGuard guard;
    switch (j.kind()) {
        case JsonValue::Kind::Null: return Value::none();
        case JsonValue::Kind::Bool: return Value::boolean(j.as_bool());
        case JsonValue::Kind::Int: return Value::integer(j.as_int());
        case JsonValue::Kind::Float: return Value::flt(j.as_number());
        case JsonValue::Kind::String: return Value::str(j.as_string());
        case JsonValue::Kind::Array: {
            std::vector<Value> items;
            items.reserve(j.size());
            for (const auto& e : j.as_array()) items.push_back(from_json(e));
            return Value::list(std::move(items));
        }
        case JsonValue::Kind::Object: {
            Value d = Value::dict();
            d.d->items.reserve(j.size());
            for (const auto& m : j.as_object()) d.d->items.emplace_back(m.first, from_json(m.second));
            return d;
        }
    }
    return Value();
}

JsonValue to_json(const Value& v, int depth = 0) {
    if (depth > 512) fail("tojson: value nested too deeply");
    switch (v.t) {
        case Value::None: return JsonValue(nullptr);
        case Value::Bool: return JsonValue(v.b);
        case Value::Int: return JsonValue(v.i);
        case Value::Float: return JsonValue(v.f);
        case Value::Str: return JsonValue(v.s);
        case Value::List: {
            if (v.b) fail("Object of type generator is not JSON serializable");
            JsonValue a = JsonValue::array();
            auto& arr = a.as_array();
            arr.reserve(v.l->size());
            for (const auto& e : *v.l) arr.push_back(to_json(e, depth + 1));
            return a;
        }
        case Value::Dict:
            if (!v.d->ns && !v.d->loop) {
                JsonValue o = JsonValue::object();
                auto& obj = o.as_object();
                obj.reserve(v.d->items.size());
                for (const auto& kv : v.d->items) obj.emplace_back(key_json(kv.first), to_json(kv.second, depth + 1));
                return o;
            }
            break;
        default: break;
    }
    fail(std::string("Object of type ") + type_name(v) + " is not JSON serializable");
}

// Items produced by iterating a value (Python iteration).
std::vector<Value> iterate(const Value& v) {
    if (v.t == Value::List) charge(v.l->size() / 16);
    if (v.t == Value::Str) charge(v.s.size() / 16);
    if (v.t == Value::Dict) charge(v.d->items.size() / 16);
    switch (v.t) {
        case Value::Undef: return {};
        case Value::List:
            if (v.b && !v.s.empty()) fail(v.s);  // deferred error of a lazy filter
            return *v.l;
        case Value::Dict: {
            if (v.d->ns || v.d->loop) break;
            std::vector<Value> out;
            out.reserve(v.d->items.size());
            for (const auto& kv : v.d->items) out.push_back(key_dec(kv.first));
            return out;
        }
        case Value::Str: {
            std::vector<Value> out;
            auto off = cp_offsets(v.s);
            out.reserve(off.size());
            for (size_t k = 0; k + 1 < off.size(); ++k) out.push_back(Value::str(v.s.substr(off[k], off[k + 1] - off[k])));
            return out;
        }
        default: break;
    }
    fail(std::string("'") + type_name(v) + "' object is not iterable");
}

int64_t length(const Value& v) {
    switch (v.t) {
        case Value::Undef: return 0;
        case Value::Str: return cp_count(v.s);
        case Value::List:
            if (v.b) fail("object of type 'generator' has no len()");
            return static_cast<int64_t>(v.l->size());
        case Value::Dict:
            if (!v.d->ns && !v.d->loop) return static_cast<int64_t>(v.d->items.size());
            break;
        default: break;
    }
    fail(std::string("object of type '") + type_name(v) + "' has no len()");
}

bool contains(const Value& container, const Value& item) {
    if (container.t == Value::Str) charge(container.s.size() / 256);
    if (container.t == Value::List) charge(container.l->size() / 16);
    switch (container.t) {
        case Value::Undef: return false;
        case Value::Str:
            if (item.t != Value::Str)
                fail(std::string("'in <string>' requires string as left operand, not ") + type_name(item));
            return container.s.find(item.s) != std::string::npos;
        case Value::List:
            for (const auto& e : *container.l)
                if (equals(e, item)) return true;
            return false;
        case Value::Dict:
            if (container.d->ns || container.d->loop) break;
            if ((item.t == Value::List && (item.tup || item.b)) || item.t == Value::Undef) return false;  // hashable
            return container.d->find(key_enc(item)) != nullptr;
        default: break;
    }
    fail(std::string("argument of type '") + type_name(container) + "' is not iterable");
}

// Python slice index normalisation.
void slice_indices(int64_t len, const Value* start, const Value* stop, const Value* step, int64_t& b, int64_t& e,
                   int64_t& st) {
    auto getint = [](const Value* v, bool& has) -> int64_t {
        has = v && v->t != Value::None;
        if (!has) return 0;
        if (!is_intlike(*v)) fail("slice indices must be integers or None or have an __index__ method");
        return as_i(*v);
    };
    bool hs, he, hp;
    int64_t s0 = getint(start, hs), e0 = getint(stop, he), p0 = getint(step, hp);
    st = hp ? p0 : 1;
    if (st == 0) fail("slice step cannot be zero");
    if (st > 0) {
        b = hs ? (s0 < 0 ? std::max<int64_t>(0, s0 + len) : std::min(s0, len)) : 0;
        e = he ? (e0 < 0 ? std::max<int64_t>(0, e0 + len) : std::min(e0, len)) : len;
    } else {
        b = hs ? (s0 < 0 ? std::max<int64_t>(-1, s0 + len) : std::min(s0, len - 1)) : len - 1;
        e = he ? (e0 < 0 ? std::max<int64_t>(-1, e0 + len) : std::min(e0, len - 1)) : -1;
    }
}

Value do_slice(const Value& obj, const Value* start, const Value* stop, const Value* step) {
    if (obj.t == Value::Undef) undefined_error(obj);
    if (is_gen(obj)) fail("'generator' object is not subscriptable");
    if (obj.t == Value::List) {
        int64_t b, e, st;
        slice_indices(static_cast<int64_t>(obj.l->size()), start, stop, step, b, e, st);
        std::vector<Value> out;
        charge(obj.l->size() / 16);
        if (st > 0)
            for (int64_t k = b; k < e; k = (st > e - k) ? e : k + st) out.push_back((*obj.l)[static_cast<size_t>(k)]);
        else
            for (int64_t k = b; k > e; k = (st < e - k) ? e : k + st) out.push_back((*obj.l)[static_cast<size_t>(k)]);
        Value r = Value::list(std::move(out));
        r.tup = obj.tup;
        return r;
    }
    if (obj.t == Value::Str) {
        bool ascii = is_ascii(obj.s);
        std::vector<size_t> off;
        int64_t len;
        if (ascii) {
            len = static_cast<int64_t>(obj.s.size());
        } else {
            off = cp_offsets(obj.s);
            len = static_cast<int64_t>(off.size()) - 1;
        }
        int64_t b, e, st;
        slice_indices(len, start, stop, step, b, e, st);
        std::string out;
        auto put = [&](int64_t k) {
            if (ascii) out += obj.s[static_cast<size_t>(k)];
            else out.append(obj.s, off[static_cast<size_t>(k)], off[static_cast<size_t>(k) + 1] - off[static_cast<size_t>(k)]);
        };
        if (st == 1 && ascii) return Value::str(b < e ? obj.s.substr(static_cast<size_t>(b), static_cast<size_t>(e - b)) : "");
        charge(obj.s.size() / 64);
        if (st > 0)
            for (int64_t k = b; k < e; k = (st > e - k) ? e : k + st) put(k);
        else
            for (int64_t k = b; k > e; k = (st < e - k) ? e : k + st) put(k);
        return Value::str(std::move(out));
    }
    fail(std::string("'") + type_name(obj) + "' object is not subscriptable");
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

// ---------------------------------------------------------------- interpreter

struct Scope {
    std::vector<std::pair<std::string, Value>> vars;
    std::shared_ptr<Scope> parent;
    const std::vector<std::string>* undef = nullptr;  // names that read as undefined until assigned here
    Value* find_local(std::string_view k) {
        for (auto& kv : vars)
            if (kv.first == k) return &kv.second;
        return nullptr;
    }
    void set(std::string_view k, Value v) {
        if (Value* p = find_local(k)) {
            *p = std::move(v);
            return;
        }
        vars.emplace_back(std::string(k), std::move(v));
    }
};
using ScopeP = std::shared_ptr<Scope>;

enum class Flow { Normal, Break, Continue };

const Value* arg_at(const CallArgs& a, size_t idx, const char* name) {
    if (idx < a.pos.size()) return &a.pos[idx];
    for (const auto& kv : a.kw)
        if (kv.first == name) return &kv.second;
    return nullptr;
}

bool arg_bool(const CallArgs& a, size_t idx, const char* name, bool dflt) {
    const Value* v = arg_at(a, idx, name);
    return v ? truthy(*v) : dflt;
}

}  // namespace

struct Interp {
    Value ctx;  // Dict with the render context
    ScopeP root;
    int eval_depth = 0;
    int call_depth = 0;
    // namespaces are the only mutable containers, hence the only way to build reference cycles;
    // they are emptied when the render ends so cycles cannot leak
    std::vector<std::weak_ptr<DictData>> namespaces;
    uint64_t steps = 0;

    struct DepthGuard {
        int& d;
        DepthGuard(int& dd, int limit, const char* what) : d(dd) {
            if (++d > limit) {
                --d;
                fail(std::string("maximum ") + what + " depth exceeded");
            }
        }
        ~DepthGuard() { --d; }
    };

    void step() {
        if (++steps > kMaxSteps) fail("template exceeded the execution step limit");
    }

    // ---- name resolution

    Value lookup(const std::string& name, const ScopeP& sc) {
        for (Scope* s = sc.get(); s; s = s->parent.get()) {
            if (Value* v = s->find_local(name)) return *v;
            if (s->undef && std::find(s->undef->begin(), s->undef->end(), name) != s->undef->end())
                return Value::undef("'" + name + "' is undefined");
        }
        if (const Value* v = ctx.d->find(name)) return *v;
        Value g = global(name);
        if (!g.is_undef()) return g;
        return Value::undef("'" + name + "' is undefined");
    }

    Value global(const std::string& name) {
        if (name == "range")
            return Value::func("range", [](Interp&, CallArgs& a) {
                if (!a.kw.empty()) fail("range() takes no keyword arguments");
                for (const auto& v : a.pos)
                    if (!is_intlike(v)) fail(std::string("'") + type_name(v) + "' object cannot be interpreted as an integer");
                int64_t start = 0, stop = 0, st = 1;
                if (a.pos.size() == 1) stop = as_i(a.pos[0]);
                else if (a.pos.size() == 2) start = as_i(a.pos[0]), stop = as_i(a.pos[1]);
                else if (a.pos.size() == 3) start = as_i(a.pos[0]), stop = as_i(a.pos[1]), st = as_i(a.pos[2]);
                else fail("range expected at most 3 arguments");
                if (st == 0) fail("range() arg 3 must not be zero");
                int64_t n = 0;
                __int128 len = 0;
                if (st > 0 && start < stop) len = ((__int128)stop - start + st - 1) / st;
                if (st < 0 && start > stop) len = ((__int128)start - stop - st - 1) / (-(__int128)st);
                if (len > kMaxRange)
                    fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
                n = static_cast<int64_t>(len);
                if (n > kMaxRange)
                    fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
                std::vector<Value> out;
                out.reserve(static_cast<size_t>(n));
                for (int64_t k = 0; k < n; ++k) out.push_back(Value::integer(start + k * st));
                return Value::list(std::move(out));
            });
        if (name == "namespace" || name == "dict")
            return Value::func(name, [ns = name == "namespace"](Interp& in, CallArgs& a) {
                Value d = Value::dict();
                d.d->ns = ns;
                if (ns) in.namespaces.push_back(d.d);
                for (const auto& p : a.pos) {
                    if (p.t == Value::Dict) {
                        for (const auto& kv : p.d->items) d.d->set(kv.first, kv.second);
                    } else if (p.t == Value::List) {
                        for (const auto& e : *p.l) {
                            if (e.t != Value::List || e.l->size() != 2 || (*e.l)[0].t != Value::Str)
                                fail("dictionary update sequence element has wrong length");
                            d.d->set((*e.l)[0].s, (*e.l)[1]);
                        }
                    } else {
                        fail(std::string("'") + type_name(p) + "' object is not iterable");
                    }
                }
                for (const auto& kv : a.kw) d.d->set(kv.first, kv.second);
                return d;
            });
        if (name == "raise_exception")
            return Value::func("raise_exception", [](Interp&, CallArgs& a) -> Value {
                const Value* m = arg_at(a, 0, "message");
                fail(m ? to_str(*m) : std::string());
            });
        if (name == "strftime_now")
            return Value::func("strftime_now", [](Interp&, CallArgs& a) {
                const Value* f = arg_at(a, 0, "format");
                if (!f || f->t != Value::Str) fail("strftime_now() needs a format string");
                std::time_t now = std::time(nullptr);
                std::tm tmv{};
                localtime_r(&now, &tmv);
                char buf[512];
                size_t n = std::strftime(buf, sizeof buf, f->s.c_str(), &tmv);
                return Value::str(std::string(buf, n));
            });
        if (name == "cycler" || name == "joiner" || name == "lipsum")
            return Value::func(name, [name](Interp&, CallArgs&) -> Value { fail(name + "() is not supported"); });
        return Value();
    }

    // ---- attribute / item access

    Value unsafe(const Value& obj, const std::string& name) {
        return Value::undef("access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe.");
    }

    static bool is_str_method(const std::string& n) {
        static const char* names[] = {"startswith", "endswith", "strip", "lstrip", "rstrip", "split", "rsplit",
                                      "splitlines", "replace", "upper", "lower", "title", "capitalize", "find",
                                      "rfind", "index", "rindex", "count", "join", "format", "isdigit", "isalpha",
                                      "isalnum", "isspace", "isupper", "islower", "isnumeric", "isdecimal",
                                      "removeprefix", "removesuffix", "partition", "rpartition", "casefold",
                                      "swapcase", "center", "ljust", "rjust", "zfill", "format_map", "encode",
                                      "expandtabs", "istitle", "isidentifier", "isprintable", "isascii",
                                      "maketrans", "translate", nullptr};
        for (int k = 0; names[k]; ++k)
            if (n == names[k]) return true;
        return false;
    }

    Value bound(const Value& obj, const std::string& name) {
        return Value::func(name, [obj, name](Interp& in, CallArgs& a) { return in.call_method(obj, name, a); });
    }

    // obj.name (jinja getattr: attribute first, then item)
    Value get_attr(const Value& obj, const std::string& name) {
        switch (obj.t) {
            case Value::Undef: undefined_error(obj);
            case Value::Dict: {
                if (obj.d->ns || obj.d->loop) {
                    if (obj.d->loop && (name == "cycle" || name == "changed")) return bound(obj, name);
                    if (const Value* v = obj.d->find(name)) return *v;
                    break;
                }
                if (name == "items" || name == "keys" || name == "values" || name == "get" || name == "copy")
                    return bound(obj, name);
                if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" || name == "clear")
                    return unsafe(obj, name);
                if (const Value* v = obj.d->find(name)) return *v;
                break;
            }
            case Value::Str:
                if (is_str_method(name)) return bound(obj, name);
                break;
            case Value::List:
                if (name == "index" || name == "count" || name == "copy") return bound(obj, name);
                if (name == "append" || name == "extend" || name == "insert" || name == "pop" || name == "remove" ||
                    name == "reverse" || name == "sort" || name == "clear")
                    return unsafe(obj, name);
                break;
            default: break;
        }
        if (obj.t == Value::None) return Value::undef("'None' has no attribute '" + name + "'");
        return Value::undef("'" + obj_type_repr(obj) + "' has no attribute '" + name + "'");
    }

    // obj[key] (jinja getitem: item first, then attribute)
    Value get_item(const Value& obj, const Value& key) {
        switch (obj.t) {
            case Value::Undef: undefined_error(obj);
            case Value::Dict:
                if (!obj.d->ns && !obj.d->loop && (key.t == Value::Str || is_num(key) || key.t == Value::None)) {
                    if (const Value* v = obj.d->find(key_enc(key))) return *v;
                }
                break;
            case Value::List:
                if (is_intlike(key) && !obj.b) {
                    int64_t n = static_cast<int64_t>(obj.l->size()), k = as_i(key);
                    if (k < 0) k += n;
                    if (k >= 0 && k < n) return (*obj.l)[static_cast<size_t>(k)];
                    return Value::undef(obj_type_repr(obj) + " has no element " + std::to_string(as_i(key)));
                }
                break;
            case Value::Str:
                if (is_intlike(key)) {
                    int64_t n = cp_count(obj.s), k = as_i(key);
                    if (k < 0) k += n;
                    if (k >= 0 && k < n) {
                        Value e = Value::integer(k + 1), b = Value::integer(k);
                        return do_slice(obj, &b, &e, nullptr);
                    }
                    return Value::undef(obj_type_repr(obj) + " has no element " + std::to_string(as_i(key)));
                }
                break;
            default: break;
        }
        if (key.t == Value::Str) return get_attr(obj, key.s);
        if (obj.t == Value::None) return Value::undef("'None' has no attribute " + repr(key));
        return Value::undef(obj_type_repr(obj) + " has no element " + repr(key));
    }

    // ---- methods

    Value call_method(const Value& obj, const std::string& name, CallArgs& a) {
        if (obj.t == Value::Str) return str_method(obj.s, name, a);
        if (obj.t == Value::Dict) {
            const DictData& d = *obj.d;
            if (d.loop && name == "cycle") {
                if (a.pos.empty()) fail("no items for cycling given");
                const Value* idx = d.find("index0");
                return a.pos[static_cast<size_t>(idx ? as_i(*idx) : 0) % a.pos.size()];
            }
            if (d.loop && name == "changed") {
                // True on the first call and whenever the arguments differ from the previous call's
                Value args = Value::list(a.pos);
                DictData& md = *obj.d;
                Value* last = md.find("\x02" "changed");
                if (last && equals(*last, args)) return Value::boolean(false);
                md.set("\x02" "changed", args);
                return Value::boolean(true);
            }
            if (name == "items") {
                std::vector<Value> out;
                out.reserve(d.items.size());
                for (const auto& kv : d.items) out.push_back(tuple({key_dec(kv.first), kv.second}));
                return Value::list(std::move(out));
            }
            if (name == "keys") {
                std::vector<Value> out;
                for (const auto& kv : d.items) out.push_back(key_dec(kv.first));
                return Value::list(std::move(out));
            }
            if (name == "values") {
                std::vector<Value> out;
                for (const auto& kv : d.items) out.push_back(kv.second);
                return Value::list(std::move(out));
            }
            if (name == "get") {
                const Value* k = arg_at(a, 0, "key");
                if (!k) fail("get expected at least 1 argument, got 0");
                if (const Value* v = d.find(key_enc(*k))) return *v;
                const Value* dflt = arg_at(a, 1, "default");
                return dflt ? *dflt : Value::none();
            }
            if (name == "copy") {
                Value c = Value::dict();
                c.d->items = d.items;
                return c;
            }
        }
        if (obj.t == Value::List) {
            if (name == "count") {
                const Value* x = arg_at(a, 0, "x");
                if (!x) fail("count() takes exactly one argument");
                int64_t c = 0;
                for (const auto& e : *obj.l)
                    if (equals(e, *x)) ++c;
                return Value::integer(c);
            }
            if (name == "index") {
                const Value* x = arg_at(a, 0, "x");
                if (!x) fail("index expected at least 1 argument");
                for (size_t k = 0; k < obj.l->size(); ++k)
                    if (equals((*obj.l)[k], *x)) return Value::integer(static_cast<int64_t>(k));
                fail(repr(*x) + " is not in list");
            }
            if (name == "copy") return Value::list(*obj.l);
        }
        // Not a built-in method: an attribute holding a callable (e.g. a macro stored in a namespace).
        Value f;
        if (obj.t == Value::Dict && (obj.d->ns || obj.d->loop)) {
            if (const Value* v = obj.d->find(name)) f = *v;
            else f = Value::undef("'" + obj_type_repr(obj) + "' has no attribute '" + name + "'");
        } else if (obj.t == Value::Dict) {
            if (const Value* v = obj.d->find(name)) f = *v;
            else f = Value::undef("'dict object' has no attribute '" + name + "'");
        } else {
            f = get_attr(obj, name);
            if (f.t == Value::Fn) fail("'" + obj_type_repr(obj) + "' has no method '" + name + "'");
        }
        return call_value(f, a);
    }

    Value str_method(const std::string& s, const std::string& name, CallArgs& a) {
        charge(s.size() / 256);
        auto need_str = [&](size_t idx, const char* nm) -> const std::string& {
            const Value* v = arg_at(a, idx, nm);
            if (!v) fail(name + "() missing required argument");
            if (v->t != Value::Str) fail(name + "() argument must be str, not " + type_name(*v));
            return v->s;
        };
        auto opt_int = [&](size_t idx, const char* nm, int64_t d) -> int64_t {
            const Value* v = arg_at(a, idx, nm);
            if (!v || v->t == Value::None) return d;
            if (!is_intlike(*v)) fail(std::string("'") + type_name(*v) + "' object cannot be interpreted as an integer");
            return as_i(*v);
        };
        if (name == "startswith" || name == "endswith") {
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
        if (name == "strip") return Value::str(py_strip(s, arg_at(a, 0, "chars"), true, true));
        if (name == "lstrip") return Value::str(py_strip(s, arg_at(a, 0, "chars"), true, false));
        if (name == "rstrip") return Value::str(py_strip(s, arg_at(a, 0, "chars"), false, true));
        if (name == "split" || name == "rsplit") {
            const Value* sep = arg_at(a, 0, "sep");
            int64_t mx = opt_int(1, "maxsplit", -1);
            auto parts = name == "split" ? py_split(s, sep, mx) : py_rsplit(s, sep, mx);
            std::vector<Value> out;
            out.reserve(parts.size());
            for (auto& p : parts) out.push_back(Value::str(std::move(p)));
            return Value::list(std::move(out));
        }
        if (name == "splitlines") {
            auto parts = py_splitlines(s, arg_bool(a, 0, "keepends", false));
            std::vector<Value> out;
            for (auto& p : parts) out.push_back(Value::str(std::move(p)));
            return Value::list(std::move(out));
        }
        if (name == "replace") {
            const std::string& o = need_str(0, "old");
            const std::string& nw = need_str(1, "new");
            return Value::str(py_replace(s, o, nw, opt_int(2, "count", -1)));
        }
        if (name == "upper") return Value::str(ascii_upper(s));
        if (name == "lower" || name == "casefold") return Value::str(ascii_lower(s));
        if (name == "title") return Value::str(py_title(s));
        if (name == "capitalize") return Value::str(py_capitalize(s));
        if (name == "swapcase") {
            std::string o = s;
            for (auto& c : o) {
                unsigned char u = static_cast<unsigned char>(c);
                c = static_cast<char>(std::isupper(u) ? std::tolower(u) : std::toupper(u));
            }
            return Value::str(o);
        }
        if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
            const std::string& sub = need_str(0, "sub");
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
        if (name == "join") {
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
        if (name == "format") return Value::str(brace_format(s, a));
        auto all_of = [&](auto pred) {
            if (s.empty()) return Value::boolean(false);
            for (unsigned char c : s)
                if (!pred(c)) return Value::boolean(false);
            return Value::boolean(true);
        };
        if (name == "isdigit" || name == "isnumeric" || name == "isdecimal")
            return all_of([](unsigned char c) { return std::isdigit(c) != 0; });
        if (name == "isalpha") return all_of([](unsigned char c) { return std::isalpha(c) != 0 || c >= 0x80; });
        if (name == "isalnum") return all_of([](unsigned char c) { return std::isalnum(c) != 0 || c >= 0x80; });
        if (name == "isspace") return all_of([](unsigned char c) { return py_space(c); });
        if (name == "isascii") {
            for (unsigned char c : s)
                if (c >= 0x80) return Value::boolean(false);
            return Value::boolean(true);
        }
        if (name == "isupper" || name == "islower") {
            bool any = false;
            for (unsigned char c : s) {
                if (std::isalpha(c)) {
                    any = true;
                    if (name == "isupper" ? std::islower(c) : std::isupper(c)) return Value::boolean(false);
                }
            }
            return Value::boolean(any);
        }
        if (name == "removeprefix") {
            const std::string& p = need_str(0, "prefix");
            return Value::str(s.compare(0, p.size(), p) == 0 && s.size() >= p.size() ? s.substr(p.size()) : s);
        }
        if (name == "removesuffix") {
            const std::string& p = need_str(0, "suffix");
            if (!p.empty() && s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0)
                return Value::str(s.substr(0, s.size() - p.size()));
            return Value::str(s);
        }
        if (name == "partition" || name == "rpartition") {
            const std::string& sep = need_str(0, "sep");
            if (sep.empty()) fail("empty separator");
            size_t p = name == "partition" ? s.find(sep) : s.rfind(sep);
            if (p == std::string::npos) {
                if (name == "partition") return tuple({Value::str(s), Value::str(""), Value::str("")});
                return tuple({Value::str(""), Value::str(""), Value::str(s)});
            }
            return tuple({Value::str(s.substr(0, p)), Value::str(sep), Value::str(s.substr(p + sep.size()))});
        }
        if (name == "center" || name == "ljust" || name == "rjust" || name == "zfill") {
            int64_t w = opt_int(0, "width", 0);
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
        fail("str method '" + name + "' is not supported");
    }

    Value call_value(const Value& f, CallArgs& a) {
        if (f.t == Value::Fn) return f.fn->fn(*this, a);
        if (f.t == Value::Dict && f.d->loop) {
            if (const Value* c = f.d->find("\x02" "call")) return c->fn->fn(*this, a);
            fail("'LoopContext' object is not callable (the loop is not recursive)");
        }
        if (f.t == Value::Undef) undefined_error(f);
        fail(std::string("'") + type_name(f) + "' object is not callable");
    }

    // ---- macros

    Value call_macro(const Stmt& m, const std::weak_ptr<Scope>& def, CallArgs& a, const Value* caller) {
        DepthGuard g(call_depth, kMaxCallDepth, "macro call");
        step();
        auto sc = std::make_shared<Scope>();
        sc->parent = def.lock();
        if (!sc->parent) sc->parent = root;
        sc->undef = &m.undef_names;
        size_t np = m.params.size();
        if (a.pos.size() > np && !m.uses_varargs)
            fail("macro '" + m.name + "' takes not more than " + std::to_string(np) + " argument(s)");
        Value varargs = Value::list();
        varargs.tup = true;
        for (size_t k = np; k < a.pos.size(); ++k) varargs.l->push_back(a.pos[k]);
        Value kwargs = Value::dict();
        for (const auto& kv : a.kw) {
            if (std::find(m.params.begin(), m.params.end(), kv.first) == m.params.end()) {
                if (!m.uses_kwargs) fail("macro '" + m.name + "' takes no keyword argument '" + kv.first + "'");
                kwargs.d->set(kv.first, kv.second);
            }
        }
        for (size_t k = 0; k < np; ++k) {
            const Value* v = arg_at(a, k, m.params[k].c_str());
            if (v) sc->set(m.params[k], *v);
            else if (m.defaults[k]) sc->set(m.params[k], eval(m.defaults[k].get(), sc));
            else sc->set(m.params[k], Value::undef("parameter '" + m.params[k] + "' was not provided"));
        }
        sc->set("varargs", varargs);
        sc->set("kwargs", kwargs);
        if (caller) sc->set("caller", *caller);
        std::string out;
        exec_body(m.body, sc, out);
        return Value::str(std::move(out));
    }

    Value make_macro(const Stmt& m, const ScopeP& sc) {
        std::weak_ptr<Scope> w = sc;
        const Stmt* mp = &m;
        return Value::func(m.name, [mp, w](Interp& in, CallArgs& a) {
            const Value* caller = in.pending_caller;
            in.pending_caller = nullptr;
            return in.call_macro(*mp, w, a, caller);
        });
    }

    // ---- expressions

    void eval_args(const Node* n, size_t first, const ScopeP& sc, CallArgs& a) {
        a.pos.reserve(n->kids.size() - first);
        for (size_t k = first; k < n->kids.size(); ++k) a.pos.push_back(eval(n->kids[k].get(), sc));
        for (const auto& kv : n->kwargs) a.kw.emplace_back(kv.first, eval(kv.second.get(), sc));
    }

    Value eval(const Node* n, const ScopeP& sc) {
        DepthGuard g(eval_depth, kMaxEvalDepth, "expression evaluation");
        switch (n->k) {
            case NK::Const: return n->cval;
            case NK::Name: return lookup(n->name, sc);
            case NK::List:
            case NK::Tuple: {
                std::vector<Value> items;
                items.reserve(n->kids.size());
                for (const auto& k : n->kids) items.push_back(eval(k.get(), sc));
                Value r = Value::list(std::move(items));
                r.tup = n->k == NK::Tuple;
                return r;
            }
            case NK::Dict: {
                Value d = Value::dict();
                for (size_t k = 0; k + 1 < n->kids.size(); k += 2) {
                    Value key = eval(n->kids[k].get(), sc);
                    Value val = eval(n->kids[k + 1].get(), sc);
                    if (key.t == Value::Undef) undefined_error(key);
                    d.d->set(key_enc(key), std::move(val));
                }
                return d;
            }
            case NK::GetAttr: return get_attr(eval(n->kids[0].get(), sc), n->name);
            case NK::GetItem: return get_item(eval(n->kids[0].get(), sc), eval(n->kids[1].get(), sc));
            case NK::Slice: {
                Value obj = eval(n->kids[0].get(), sc);
                Value parts[3];
                for (int k = 0; k < 3; ++k)
                    if (n->kids[static_cast<size_t>(k) + 1]) parts[k] = eval(n->kids[static_cast<size_t>(k) + 1].get(), sc);
                    else parts[k] = Value::none();
                return do_slice(obj, &parts[0], &parts[1], &parts[2]);
            }
            case NK::Call: {
                const Node* callee = n->kids[0].get();
                CallArgs a;
                if (callee->k == NK::GetAttr) {
                    Value obj = eval(callee->kids[0].get(), sc);
                    eval_args(n, 1, sc, a);
                    if (obj.t == Value::Str && is_str_method(callee->name)) return str_method(obj.s, callee->name, a);
                    Value f = get_attr(obj, callee->name);
                    return call_value(f, a);
                }
                Value f = eval(callee, sc);
                eval_args(n, 1, sc, a);
                return call_value(f, a);
            }
            case NK::Filter: return eval_filter(n, sc, nullptr);
            case NK::Test: {
                Value v = eval(n->kids[0].get(), sc);
                CallArgs a;
                eval_args(n, 1, sc, a);
                bool r = test(n->name, v, a);
                return Value::boolean(n->negated ? !r : r);
            }
            case NK::Bin: return binop(n->op, eval(n->kids[0].get(), sc), eval(n->kids[1].get(), sc));
            case NK::Neg:
            case NK::Pos: {
                Value v = eval(n->kids[0].get(), sc);
                if (v.t == Value::Undef) undefined_error(v);
                if (v.t == Value::Float) return Value::flt(n->k == NK::Neg ? -v.f : v.f);
                if (is_intlike(v)) {
                    if (n->k == NK::Neg && as_i(v) == INT64_MIN) return Value::flt(-static_cast<double>(as_i(v)));
                    return Value::integer(n->k == NK::Neg ? -as_i(v) : as_i(v));
                }
                fail(std::string("bad operand type for unary ") + (n->k == NK::Neg ? "-" : "+") + ": '" + type_name(v) + "'");
            }
            case NK::Compare: {
                Value left = eval(n->kids[0].get(), sc);
                for (size_t k = 0; k < n->ops.size(); ++k) {
                    Value right = eval(n->kids[k + 1].get(), sc);
                    const std::string& op = n->ops[k];
                    bool r;
                    if (op == "==") r = equals(left, right);
                    else if (op == "!=") r = !equals(left, right);
                    else if (op == "in") r = contains(right, left);
                    else if (op == "notin") r = !contains(right, left);
                    else {
                        int c = compare(left, right, op.c_str());
                        r = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
                        if ((is_num(left) && std::isnan(as_f(left))) || (is_num(right) && std::isnan(as_f(right)))) r = false;
                    }
                    if (!r) return Value::boolean(false);
                    left = std::move(right);
                }
                return Value::boolean(true);
            }
            case NK::And: {
                Value l = eval(n->kids[0].get(), sc);
                if (!truthy(l)) return l;
                return eval(n->kids[1].get(), sc);
            }
            case NK::Or: {
                Value l = eval(n->kids[0].get(), sc);
                if (truthy(l)) return l;
                return eval(n->kids[1].get(), sc);
            }
            case NK::Not: return Value::boolean(!truthy(eval(n->kids[0].get(), sc)));
            case NK::Cond: {
                if (truthy(eval(n->kids[0].get(), sc))) return eval(n->kids[1].get(), sc);
                if (n->kids[2]) return eval(n->kids[2].get(), sc);
                return Value::undef("the inline if-expression on line " + std::to_string(n->line) +
                                    " evaluated to false and no else section was defined.");
            }
            case NK::Concat: {
                std::string out;
                for (const auto& k : n->kids) {
                    out += to_str(eval(k.get(), sc));
                    if (out.size() > kMaxOutput) fail("result too large");
                }
                return Value::str(std::move(out));
            }
        }
        fail("internal error: unknown expression node");
    }

    Value binop(char op, const Value& a, const Value& b) {
        if (a.t == Value::Undef) undefined_error(a);
        if (b.t == Value::Undef) undefined_error(b);
        if (is_num(a) && is_num(b)) {
            bool ints = is_intlike(a) && is_intlike(b);
            switch (op) {
                // int64 overflow (Python would switch to a big int) falls back to float instead of wrapping
                case '+': {
                    int64_t r;
                    if (ints && !__builtin_add_overflow(as_i(a), as_i(b), &r)) return Value::integer(r);
                    return Value::flt(as_f(a) + as_f(b));
                }
                case '-': {
                    int64_t r;
                    if (ints && !__builtin_sub_overflow(as_i(a), as_i(b), &r)) return Value::integer(r);
                    return Value::flt(as_f(a) - as_f(b));
                }
                case '*': {
                    int64_t r;
                    if (ints && !__builtin_mul_overflow(as_i(a), as_i(b), &r)) return Value::integer(r);
                    return Value::flt(as_f(a) * as_f(b));
                }
                case '/':
                    if (as_f(b) == 0.0) fail(ints ? "division by zero" : "float division by zero");
                    return Value::flt(as_f(a) / as_f(b));
                case 'F':
                    if (ints) {
                        int64_t x = as_i(a), y = as_i(b);
                        if (y == 0) fail("integer division or modulo by zero");
                        if (y == -1 && x == INT64_MIN) return Value::flt(-static_cast<double>(x));
                        int64_t q = x / y;
                        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
                        return Value::integer(q);
                    }
                    if (as_f(b) == 0.0) fail("float floor division by zero");
                    return Value::flt(std::floor(as_f(a) / as_f(b)));
                case '%':
                    if (ints) {
                        int64_t x = as_i(a), y = as_i(b);
                        if (y == 0) fail("integer division or modulo by zero");
                        if (y == -1) return Value::integer(0);
                        int64_t r = x % y;
                        if (r != 0 && ((r < 0) != (y < 0))) r += y;
                        return Value::integer(r);
                    } else {
                        double x = as_f(a), y = as_f(b);
                        if (y == 0.0) fail("float modulo");
                        double r = std::fmod(x, y);
                        if (r != 0 && ((r < 0) != (y < 0))) r += y;
                        return Value::flt(r);
                    }
                case 'P':
                    if (ints && as_i(b) >= 0) {
                        int64_t base = as_i(a), e = as_i(b), r = 1;
                        bool overflow = false;
                        while (e > 0 && !overflow) {
                            if (e & 1) overflow |= __builtin_mul_overflow(r, base, &r);
                            e >>= 1;
                            if (e > 0) overflow |= __builtin_mul_overflow(base, base, &base);
                        }
                        if (!overflow) return Value::integer(r);
                    }
                    return Value::flt(std::pow(as_f(a), as_f(b)));
            }
        }
        if (op == '+') {
            if (a.t == Value::Str && b.t == Value::Str) {
                if (a.s.size() + b.s.size() > kMaxOutput) fail("result too large");
                if (a.b || b.b) return markup((a.b ? a.s : html_escape(a.s)) + (b.b ? b.s : html_escape(b.s)));
                return Value::str(a.s + b.s);
            }
            if (a.t == Value::List && b.t == Value::List && !a.b && !b.b && a.tup == b.tup) {
                if (a.l->size() + b.l->size() > 10'000'000) fail("result too large");
                std::vector<Value> out = *a.l;
                out.insert(out.end(), b.l->begin(), b.l->end());
                Value r = Value::list(std::move(out));
                r.tup = a.tup;
                return r;
            }
            if (a.t == Value::Str || b.t == Value::Str)
                fail(std::string("can only concatenate str (not \"") + type_name(a.t == Value::Str ? b : a) + "\") to str");
        }
        if (op == '*') {
            auto is_seq = [](const Value& x) { return x.t == Value::Str || (x.t == Value::List && !x.b); };
            const Value* seq = is_seq(a) ? &a : is_seq(b) ? &b : nullptr;
            const Value* cnt = seq == &a ? &b : &a;
            if (seq && is_intlike(*cnt)) {
                int64_t n = std::max<int64_t>(0, as_i(*cnt));
                if (seq->t == Value::Str) {
                    if (static_cast<double>(n) * static_cast<double>(seq->s.size()) > static_cast<double>(kMaxOutput)) fail("result too large");
                    std::string out;
                    for (int64_t k = 0; k < n; ++k) out += seq->s;
                    return Value::str(std::move(out));
                }
                if (static_cast<double>(n) * static_cast<double>(seq->l->size()) > 1e7) fail("result too large");
                std::vector<Value> out;
                for (int64_t k = 0; k < n; ++k) out.insert(out.end(), seq->l->begin(), seq->l->end());
                Value r = Value::list(std::move(out));
                r.tup = seq->tup;
                return r;
            }
        }
        if (op == '%' && a.t == Value::Str) return Value::str(percent_format(a.s, b));
        const char* sym = op == 'F' ? "//" : op == 'P' ? "**" : nullptr;
        std::string s = sym ? sym : std::string(1, op);
        fail("unsupported operand type(s) for " + s + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
    }

    // ---- tests

    bool test(const std::string& name, const Value& v, CallArgs& a) {
        auto arg0 = [&]() -> const Value& {
            if (a.pos.empty()) fail("test '" + name + "' needs an argument");
            return a.pos[0];
        };
        if (name == "defined") return !v.is_undef();
        if (name == "undefined") return v.is_undef();
        if (name == "none") return v.t == Value::None;
        if (name == "boolean") return v.t == Value::Bool;
        if (name == "true") return v.t == Value::Bool && v.b;
        if (name == "false") return v.t == Value::Bool && !v.b;
        if (name == "integer") return v.t == Value::Int;
        if (name == "float") return v.t == Value::Float;
        if (name == "number") return is_num(v);
        if (name == "string") return v.t == Value::Str;
        if (name == "mapping") return v.t == Value::Dict && !v.d->ns && !v.d->loop;
        if (name == "iterable") return v.t == Value::Str || v.t == Value::List || v.t == Value::Undef ||
                                       (v.t == Value::Dict && !v.d->ns && !v.d->loop);
        if (name == "sequence") return v.t == Value::Str || v.t == Value::Undef || (v.t == Value::List && !v.b) || (v.t == Value::Dict && !v.d->ns && !v.d->loop);
        if (name == "callable") return v.t == Value::Fn || v.t == Value::Undef;
        if (name == "sameas") {
            const Value& o = arg0();
            if (v.t != o.t) return false;
            if (v.t == Value::List) return v.l == o.l;
            if (v.t == Value::Dict) return v.d == o.d;
            if (v.t == Value::Str) return false;
            return equals(v, o);
        }
        if (name == "eq" || name == "equalto" || name == "==") return equals(v, arg0());
        if (name == "ne" || name == "!=") return !equals(v, arg0());
        if (name == "lt" || name == "lessthan" || name == "<") return compare(v, arg0()) < 0;
        if (name == "le" || name == "<=") return compare(v, arg0()) <= 0;
        if (name == "gt" || name == "greaterthan" || name == ">") return compare(v, arg0()) > 0;
        if (name == "ge" || name == ">=") return compare(v, arg0()) >= 0;
        if (name == "in") return contains(arg0(), v);
        if (name == "odd" || name == "even" || name == "divisibleby") {
            if (v.t == Value::Undef) undefined_error(v);
            if (!is_num(v)) fail(std::string("unsupported operand type(s) for %: '") + type_name(v) + "' and 'int'");
            if (name == "divisibleby") return equals(binop('%', v, arg0()), Value::integer(0));
            Value r = binop('%', v, Value::integer(2));
            return equals(r, Value::integer(name == "odd" ? 1 : 0));
        }
        if (name == "lower" || name == "upper") {  // str(value).islower() / .isupper()
            std::string sv = to_str(v);
            bool cased = false;
            for (unsigned char c : sv) {
                if (std::isalpha(c)) {
                    cased = true;
                    if (name == "lower" ? std::isupper(c) : std::islower(c)) return false;
                }
            }
            return cased;
        }
        if (name == "escaped") return false;
        if (name == "filter" || name == "test") {
            if (v.t != Value::Str) return false;
            static const char* filters[] = {"abs", "attr", "batch", "capitalize", "center", "count", "d", "default",
                                            "dictsort", "e", "escape", "first", "float", "format", "indent", "int",
                                            "items", "join", "last", "length", "list", "lower", "map", "max", "min",
                                            "reject", "rejectattr", "replace", "reverse", "round", "safe", "select",
                                            "selectattr", "slice", "sort", "string", "sum", "title", "tojson", "trim",
                                            "unique", "upper", "wordcount", nullptr};
            static const char* tests[] = {"defined", "undefined", "none", "boolean", "true", "false", "integer",
                                          "float", "number", "string", "mapping", "iterable", "sequence", "callable",
                                          "sameas", "eq", "equalto", "ne", "lt", "le", "gt", "ge", "in", "odd",
                                          "even", "divisibleby", "lower", "upper", "escaped", "filter", "test", nullptr};
            const char** tbl = name == "filter" ? filters : tests;
            for (int k = 0; tbl[k]; ++k)
                if (v.s == tbl[k]) return true;
            return false;
        }
        fail("No test named '" + name + "'.");
    }

    // ---- filters

    Value attr_path(const Value& v, const std::string& attr, const Value* dflt = nullptr) {
        Value cur = v;
        size_t b = 0;
        for (;;) {
            size_t e = attr.find('.', b);
            std::string part = attr.substr(b, e == std::string::npos ? std::string::npos : e - b);
            bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
            cur = get_item(cur, digits ? Value::integer(std::stoll(part)) : Value::str(part));
            if (cur.is_undef() && dflt) return *dflt;
            if (e == std::string::npos) break;
            b = e + 1;
        }
        return cur;
    }

    Value eval_filter(const Node* n, const ScopeP& sc, const Value* inject) {
        Value subj;
        const Node* s0 = n->kids[0].get();
        if (!s0) subj = inject ? *inject : Value();
        else if (s0->k == NK::Filter && inject) subj = eval_filter(s0, sc, inject);
        else subj = eval(s0, sc);
        CallArgs a;
        eval_args(n, 1, sc, a);
        return filter(n->name, subj, a);
    }

    // sort key helper for sort/unique/dictsort
    Value sort_key(const Value& v, bool case_sensitive) {
        if (!case_sensitive && v.t == Value::Str) return Value::str(ascii_lower(v.s));
        return v;
    }

    // jinja2's lazy filters (generators) raise only when iterated: model that with a generator carrying the error.
    Value filter(const std::string& name, const Value& v, CallArgs& a) {
        if (name == "items" || name == "unique" || name == "map" || name == "select" || name == "reject" ||
            name == "selectattr" || name == "rejectattr" || name == "batch" || name == "slice") {
            try {
                return filter_impl(name, v, a);
            } catch (const ChatTemplateError& e) {
                if (steps > kMaxSteps) throw;
                Value g = gen({});
                g.s = e.what();
                if (g.s.empty()) g.s = "error in lazy filter";
                return g;
            }
        }
        return filter_impl(name, v, a);
    }

    Value filter_impl(const std::string& name, const Value& v, CallArgs& a) {
        step();
        if (name == "default" || name == "d") {
            const Value* dv = arg_at(a, 0, "default_value");
            bool boolean = arg_bool(a, 1, "boolean", false);
            if (v.is_undef() || (boolean && !truthy(v))) return dv ? *dv : Value::str("");
            return v;
        }
        if (name == "length" || name == "count") return Value::integer(length(v));
        if (name == "string") return v.t == Value::Str ? v : Value::str(to_str(v));
        if (name == "safe") return markup(to_str(v));
        if (name == "upper" || name == "lower" || name == "capitalize" || name == "title" || name == "trim" ||
            name == "escape" || name == "e" || name == "forceescape" || name == "wordcount") {
            std::string s = to_str(v);
            auto keep = [&](std::string r) {
                Value o = Value::str(std::move(r));
                o.b = is_markup(v);
                return o;
            };
            if (name == "upper") return keep(ascii_upper(s));
            if (name == "lower") return keep(ascii_lower(s));
            if (name == "capitalize") return keep(py_capitalize(s));
            if (name == "trim") return keep(py_strip(s, arg_at(a, 0, "chars"), true, true));
            if (name == "wordcount") {  // len(re.findall(r"\w+", s))
                int64_t words = 0;
                bool in_word = false;
                for (unsigned char c : s) {
                    bool w = std::isalnum(c) || c == '_' || c >= 0x80;
                    if (w && !in_word) ++words;
                    in_word = w;
                }
                return Value::integer(words);
            }
            if (name == "title") {
                std::string out;
                size_t i = 0;
                // words are split on runs of [-\s({\[<]
                auto sep_len = [&](size_t k) -> size_t {
                    char c = s[k];
                    if (c == '-' || c == '(' || c == '{' || c == '[' || c == '<') return 1;
                    return ws_at(s, k);
                };
                while (i < s.size()) {
                    if (size_t w = sep_len(i)) {
                        out.append(s, i, w);
                        i += w;
                        continue;
                    }
                    size_t j = i;
                    while (j < s.size() && sep_len(j) == 0) ++j;
                    std::string w = s.substr(i, j - i);
                    out += py_capitalize(w);
                    i = j;
                }
                return keep(out);
            }
            // escape / e / forceescape (HTML)
            if (is_markup(v) && name != "forceescape") return v;
            return markup(html_escape(s));
        }
        if (name == "replace") {
            const Value* o = arg_at(a, 0, "old");
            const Value* nw = arg_at(a, 1, "new");
            const Value* cnt = arg_at(a, 2, "count");
            if (!o || !nw) fail("replace filter needs old and new");
            return Value::str(py_replace(to_str(v), to_str(*o), to_str(*nw),
                                         cnt && cnt->t != Value::None ? as_i(*cnt) : -1));
        }
        if (name == "tojson") {
            JsonDumpOptions o;
            const Value* ind = arg_at(a, 0, "indent");
            const Value* ea = nullptr;
            const Value* seps = nullptr;
            const Value* sk = nullptr;
            for (const auto& kv : a.kw) {
                if (kv.first == "ensure_ascii") ea = &kv.second;
                else if (kv.first == "separators") seps = &kv.second;
                else if (kv.first == "sort_keys") sk = &kv.second;
                else if (kv.first != "indent") fail("tojson() got an unexpected keyword argument '" + kv.first + "'");
            }
            if (a.pos.size() > 1) ea = &a.pos[1];
            if (a.pos.size() > 2) seps = &a.pos[2];
            if (a.pos.size() > 3) sk = &a.pos[3];
            o.indent = (ind && ind->t != Value::None) ? static_cast<int>(as_i(*ind)) : -1;
            o.ensure_ascii = ea ? truthy(*ea) : false;
            o.sort_keys = sk ? truthy(*sk) : false;
            if (seps && seps->t == Value::List && seps->l->size() == 2) {
                o.item_sep = to_str((*seps->l)[0]);
                o.key_sep = to_str((*seps->l)[1]);
            } else {
                o.item_sep = o.indent >= 0 ? "," : ", ";
                o.key_sep = ": ";
            }
            return Value::str(json_dump(to_json(v), o));
        }
        if (name == "join") {
            const Value* d = arg_at(a, 0, "d");
            const Value* attr = arg_at(a, 1, "attribute");
            std::string sep = d ? to_str(*d) : "";
            std::string out;
            bool first = true;
            for (const auto& e : iterate(v)) {
                if (!first) out += sep;
                first = false;
                out += to_str(attr && attr->t != Value::None ? attr_path(e, to_str(*attr)) : e);
                if (out.size() > kMaxOutput) fail("result too large");
            }
            return Value::str(out);
        }
        if (name == "first") {
            if (v.t == Value::Undef) return Value::undef("No first item, sequence was empty.");
            auto items = iterate(v);
            if (items.empty()) return Value::undef("No first item, sequence was empty.");
            return items.front();
        }
        if (name == "last") {
            if (v.t == Value::Undef) return Value::undef("No last item, sequence was empty.");
            if (is_gen(v)) fail("'generator' object is not reversible");
            auto items = iterate(v);
            if (items.empty()) return Value::undef("No last item, sequence was empty.");
            return items.back();
        }
        if (name == "list") return Value::list(iterate(v));
        if (name == "items") {
            if (v.t == Value::Undef) return Value::list();
            if (v.t != Value::Dict || v.d->ns || v.d->loop) fail("Can only get item pairs from a mapping.");
            CallArgs none;
            Value r = call_method(v, "items", none);
            r.b = true;
            return r;
        }
        if (name == "reverse") {
            if (v.t == Value::Str) {
                Value st = Value::integer(-1);
                return do_slice(v, nullptr, nullptr, &st);
            }
            bool was_gen = is_gen(v);
            auto items = iterate(v);
            std::reverse(items.begin(), items.end());
            Value r = Value::list(std::move(items));
            r.b = !was_gen && v.t == Value::List;  // reversed(list) is an iterator; a generator becomes a list
            return r;
        }
        if (name == "int") {
            const Value* dv = arg_at(a, 0, "default");
            Value d = dv ? *dv : Value::integer(0);
            int64_t base = 10;
            if (const Value* b = arg_at(a, 1, "base")) base = as_i(*b);
            if (v.t == Value::Undef) undefined_error(v);
            if (v.t == Value::Int) return v;
            if (v.t == Value::Bool) return Value::integer(v.b ? 1 : 0);
            if (v.t == Value::Float) {
                if (!std::isfinite(v.f)) return d;
                if (std::fabs(v.f) >= 9.2e18) return Value::flt(std::trunc(v.f));  // beyond int64
                return Value::integer(static_cast<int64_t>(v.f));
            }
            if (v.t == Value::Str) {
                std::string s = py_strip(v.s, nullptr, true, true);
                std::string t;
                for (char c : s)
                    if (c != '_') t += c;
                try {
                    size_t pos = 0;
                    long long r = std::stoll(t, &pos, static_cast<int>(base));
                    if (pos == t.size() && !t.empty()) return Value::integer(r);
                } catch (...) {
                }
                try {
                    size_t pos = 0;
                    double f = std::stod(t, &pos);
                    if (pos == t.size() && std::isfinite(f))
                        return std::fabs(f) >= 9.2e18 ? Value::flt(std::trunc(f)) : Value::integer(static_cast<int64_t>(f));
                } catch (...) {
                }
            }
            return d;
        }
        if (name == "float") {
            const Value* dv = arg_at(a, 0, "default");
            Value d = dv ? *dv : Value::flt(0.0);
            if (v.t == Value::Undef) undefined_error(v);
            if (v.t == Value::Float) return v;
            if (is_intlike(v)) return Value::flt(as_f(v));
            if (v.t == Value::Str) {
                std::string s = py_strip(v.s, nullptr, true, true);
                try {
                    size_t pos = 0;
                    double f = std::stod(s, &pos);
                    if (pos == s.size() && !s.empty()) return Value::flt(f);
                } catch (...) {
                }
            }
            return d;
        }
        if (name == "abs") {
            if (v.t == Value::Float) return Value::flt(std::fabs(v.f));
            if (is_intlike(v)) {
                if (as_i(v) == INT64_MIN) return Value::flt(-static_cast<double>(as_i(v)));
                return Value::integer(std::llabs(as_i(v)));
            }
            if (v.t == Value::Undef) undefined_error(v);
            fail(std::string("bad operand type for abs(): '") + type_name(v) + "'");
        }
        if (name == "round") {
            int64_t prec = 0;
            if (const Value* p = arg_at(a, 0, "precision")) prec = as_i(*p);
            std::string method = "common";
            if (const Value* m = arg_at(a, 1, "method")) method = to_str(*m);
            if (v.t == Value::Undef) undefined_error(v);
            if (!is_num(v)) fail("round() needs a number");
            double x = as_f(v), m = std::pow(10.0, static_cast<double>(prec));
            double r;
            if (method == "common") {
                if (v.t != Value::Float) return Value::integer(as_i(v));
                // Python's round(x, n): correctly rounded decimal, ties to even (glibc printf does the same)
                if (prec >= 0 && prec < 300 && std::isfinite(x)) {
                    char buf[400];
                    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(prec), x);
                    return Value::flt(std::strtod(buf, nullptr));
                }
                r = std::nearbyint(x * m) / m;
            } else if (method == "ceil") {
                r = std::ceil(x * m) / m;
            } else if (method == "floor") {
                r = std::floor(x * m) / m;
            } else {
                fail("method must be common, ceil or floor");
            }
            return Value::flt(r);
        }
        if (name == "indent") {
            std::string ind = "    ";
            if (const Value* w = arg_at(a, 0, "width")) {
                if (w->t == Value::Str) {
                    ind = w->s;
                } else {
                    if (!is_intlike(*w)) fail("indent width must be an integer or a string");
                    if (as_i(*w) > 4096) fail("indent width too large");
                    ind = std::string(static_cast<size_t>(std::max<int64_t>(0, as_i(*w))), ' ');
                }
            }
            bool first = arg_bool(a, 1, "first", false);
            bool blank = arg_bool(a, 2, "blank", false);
            if (v.t != Value::Str) fail(std::string("unsupported operand type(s) for +=: '") + type_name(v) + "' and 'str'");
            std::string s = v.s + "\n";
            auto lines = py_splitlines(s, false);
            if (static_cast<double>(lines.size()) * static_cast<double>(ind.size()) + static_cast<double>(s.size()) >
                static_cast<double>(kMaxOutput))
                fail("result too large");
            std::string rv;
            if (blank) {
                for (size_t k = 0; k < lines.size(); ++k) {
                    if (k) rv += "\n" + ind;
                    rv += lines[k];
                }
            } else {
                rv = lines.empty() ? "" : lines[0];
                for (size_t k = 1; k < lines.size(); ++k) {
                    rv += "\n";
                    if (!lines[k].empty()) rv += ind;
                    rv += lines[k];
                }
            }
            if (first) rv = ind + rv;
            if (rv.size() > kMaxOutput) fail("result too large");
            return Value::str(rv);
        }
        if (name == "center") {
            int64_t w = 80;
            if (const Value* x = arg_at(a, 0, "width")) w = as_i(*x);
            CallArgs ca;
            ca.pos.push_back(Value::integer(w));
            return str_method(to_str(v), "center", ca);
        }
        if (name == "format") {
            std::vector<Value> args = a.pos;
            if (!a.kw.empty()) {
                Value d = Value::dict();
                for (const auto& kv : a.kw) d.d->set(kv.first, kv.second);
                return Value::str(percent_format(to_str(v), d));
            }
            return Value::str(percent_format(to_str(v), tuple(std::move(args))));
        }
        if (name == "attr") {
            const Value* n = arg_at(a, 0, "name");
            if (!n) fail("attr filter needs a name");
            std::string an = to_str(*n);
            // python getattr only: dict keys are not attributes
            if (v.t == Value::Dict && !v.d->ns && !v.d->loop &&
                !(an == "items" || an == "keys" || an == "values" || an == "get" || an == "copy"))
                return Value::undef("'dict object' has no attribute '" + an + "'");
            return get_attr(v, an);
        }
        if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
            bool is_attr = name == "selectattr" || name == "rejectattr";
            bool want = name == "select" || name == "selectattr";
            size_t k = 0;
            std::string attr;
            if (is_attr) {
                if (a.pos.empty()) fail(name + " needs an attribute");
                attr = to_str(a.pos[0]);
                k = 1;
            }
            std::string tname;
            bool has_test = k < a.pos.size();
            if (has_test) tname = to_str(a.pos[k]);
            CallArgs targs;
            for (size_t j = k + 1; j < a.pos.size(); ++j) targs.pos.push_back(a.pos[j]);
            targs.kw = a.kw;
            std::vector<Value> out;
            if (!truthy(v)) return gen({});  // jinja2: `if value:` guard
            for (const auto& e : iterate(v)) {
                Value x = is_attr ? attr_path(e, attr) : e;
                bool r = has_test ? test(tname, x, targs) : truthy(x);
                if (r == want) out.push_back(e);
            }
            return gen(std::move(out));
        }
        if (name == "map") {
            const Value* attr = nullptr;
            const Value* dflt = nullptr;
            for (const auto& kv : a.kw) {
                if (kv.first == "attribute") attr = &kv.second;
                else if (kv.first == "default") dflt = &kv.second;
            }
            std::vector<Value> out;
            if (!truthy(v)) return gen({});  // jinja2: `if value:` guard
            auto items = iterate(v);
            out.reserve(items.size());
            if (attr) {
                std::string at = to_str(*attr);
                for (const auto& e : items) out.push_back(attr_path(e, at, dflt));
                return gen(std::move(out));
            }
            if (a.pos.empty()) fail("map requires a filter argument");
            std::string fname = to_str(a.pos[0]);
            CallArgs fa;
            fa.pos.assign(a.pos.begin() + 1, a.pos.end());
            fa.kw = a.kw;
            for (const auto& e : items) {
                CallArgs c = fa;
                out.push_back(filter(fname, e, c));
            }
            return gen(std::move(out));
        }
        if (name == "unique") {
            bool cs = arg_bool(a, 0, "case_sensitive", false);
            const Value* attr = arg_at(a, 1, "attribute");
            std::vector<Value> out, seen;
            std::set<std::string> seen_keys;  // encoded scalar keys: O(log n) lookups
            for (const auto& e : iterate(v)) {
                Value key = sort_key(attr && attr->t != Value::None ? attr_path(e, to_str(*attr)) : e, cs);
                if (key.t == Value::Dict || (key.t == Value::List && !key.tup))
                    fail(std::string("unhashable type: '") + type_name(key) + "'");
                bool dup = false;
                if (key.t == Value::Str || is_num(key) || key.t == Value::None) {
                    dup = !seen_keys.insert(key_enc(key)).second;
                    charge(1);
                } else {
                    charge(seen.size() / 16 + 1);
                    for (const auto& s : seen)
                        if (equals(s, key)) {
                            dup = true;
                            break;
                        }
                }
                if (!dup) {
                    seen.push_back(key);
                    out.push_back(e);
                }
            }
            return gen(std::move(out));
        }
        if (name == "sort") {
            bool rev = arg_bool(a, 0, "reverse", false);
            bool cs = arg_bool(a, 1, "case_sensitive", false);
            const Value* attr = arg_at(a, 2, "attribute");
            auto items = iterate(v);
            std::vector<std::pair<Value, Value>> keyed;
            for (auto& e : items)
                keyed.emplace_back(sort_key(attr && attr->t != Value::None ? attr_path(e, to_str(*attr)) : e, cs), e);
            // jinja2 sorts by [key] lists: equal keys (even undefined ones) are never ordered with '<'
            auto less = [&](const Value& p, const Value& q) { return !equals(p, q) && compare(p, q) < 0; };
            std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
                return rev ? less(y.first, x.first) : less(x.first, y.first);
            });
            std::vector<Value> out;
            for (auto& kv : keyed) out.push_back(std::move(kv.second));
            return Value::list(std::move(out));
        }
        if (name == "dictsort") {
            bool cs = arg_bool(a, 0, "case_sensitive", false);
            std::string by = "key";
            if (const Value* b = arg_at(a, 1, "by")) by = to_str(*b);
            bool rev = arg_bool(a, 2, "reverse", false);
            if (v.t != Value::Dict) fail("dictsort: expected a mapping");
            CallArgs none;
            auto items = *call_method(v, "items", none).l;
            size_t pos = by == "value" ? 1 : 0;
            std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
                Value kx = sort_key((*x.l)[pos], cs), ky = sort_key((*y.l)[pos], cs);
                return rev ? compare(ky, kx) < 0 : compare(kx, ky) < 0;
            });
            return Value::list(std::move(items));
        }
        if (name == "sum") {
            const Value* attr = arg_at(a, 0, "attribute");
            const Value* start = arg_at(a, 1, "start");
            Value acc = start ? *start : Value::integer(0);
            for (const auto& e : iterate(v))
                acc = binop('+', acc, attr && attr->t != Value::None ? attr_path(e, to_str(*attr)) : e);
            return acc;
        }
        if (name == "min" || name == "max") {
            bool cs = arg_bool(a, 0, "case_sensitive", false);
            const Value* attr = arg_at(a, 1, "attribute");
            auto items = iterate(v);
            if (items.empty()) return Value::undef("No aggregated item, sequence was empty.");
            size_t best = 0;
            auto key = [&](const Value& e) { return sort_key(attr && attr->t != Value::None ? attr_path(e, to_str(*attr)) : e, cs); };
            for (size_t k = 1; k < items.size(); ++k) {
                int c = compare(key(items[k]), key(items[best]));
                if (name == "min" ? c < 0 : c > 0) best = k;
            }
            return items[best];
        }
        if (name == "batch" || name == "slice") {
            const Value* cntv = arg_at(a, 0, name == "batch" ? "linecount" : "slices");
            if (!cntv || !is_intlike(*cntv) || as_i(*cntv) <= 0) fail(name + " needs a positive count");
            int64_t cnt = as_i(*cntv);
            if (cnt > 1'000'000) fail(name + ": count too large");
            const Value* fill = arg_at(a, 1, "fill_with");
            auto items = iterate(v);
            std::vector<Value> out;
            if (name == "batch") {
                std::vector<Value> cur;
                for (auto& e : items) {
                    cur.push_back(e);
                    if (static_cast<int64_t>(cur.size()) == cnt) {
                        out.push_back(Value::list(std::move(cur)));
                        cur.clear();
                    }
                }
                if (!cur.empty()) {
                    if (fill && fill->t != Value::None)
                        while (static_cast<int64_t>(cur.size()) < cnt) cur.push_back(*fill);
                    out.push_back(Value::list(std::move(cur)));
                }
            } else {
                int64_t n = static_cast<int64_t>(items.size());
                int64_t per = n / cnt, extra = n % cnt, offset = 0;
                for (int64_t k = 0; k < cnt; ++k) {
                    int64_t start = offset + k * per;
                    if (k < extra) ++offset;
                    int64_t end = offset + (k + 1) * per;
                    std::vector<Value> part(items.begin() + start, items.begin() + end);
                    if (fill && fill->t != Value::None && k >= extra) part.push_back(*fill);
                    out.push_back(Value::list(std::move(part)));
                }
            }
            return gen(std::move(out));
        }
        fail("No filter named '" + name + "'.");
    }

    // ---- statements

    void assign(const Node* target, Value v, const ScopeP& sc) {
        if (target->k == NK::Name) {
            sc->set(target->name, std::move(v));
            return;
        }
        // ns.attr
        Value obj = lookup(target->kids[0]->name, sc);
        if (obj.t != Value::Dict || !obj.d->ns) fail("cannot assign attribute on non-namespace object");
        obj.d->set(target->name, std::move(v));
    }

    void assign_targets(const std::vector<NodeP>& targets, const Value& v, const ScopeP& sc) {
        if (targets.size() == 1) {
            assign(targets[0].get(), v, sc);
            return;
        }
        if (v.t == Value::Undef) undefined_error(v);
        std::vector<Value> items = iterate(v);
        if (items.size() > targets.size()) fail("too many values to unpack (expected " + std::to_string(targets.size()) + ")");
        if (items.size() < targets.size())
            fail("not enough values to unpack (expected " + std::to_string(targets.size()) + ", got " + std::to_string(items.size()) + ")");
        for (size_t k = 0; k < targets.size(); ++k) assign(targets[k].get(), items[k], sc);
    }

    void emit(std::string& out, const std::string& s) {
        out += s;
        if (out.size() > kMaxOutput) fail("template output too large");
    }

    Flow exec_body(const Body& body, const ScopeP& sc, std::string& out) {
        for (const auto& st : body) {
            Flow f = exec(*st, sc, out);
            if (f != Flow::Normal) return f;
        }
        return Flow::Normal;
    }

    Flow exec(const Stmt& s, const ScopeP& sc, std::string& out) {
        step();
        switch (s.k) {
            case SK::Text: emit(out, s.text); return Flow::Normal;
            case SK::Out: emit(out, to_str(eval(s.expr.get(), sc))); return Flow::Normal;
            case SK::If:
                for (size_t k = 0; k < s.conds.size(); ++k)
                    if (truthy(eval(s.conds[k].get(), sc))) return exec_body(s.bodies[k], sc, out);
                return exec_body(s.else_body, sc, out);
            case SK::For: return exec_for(s, sc, out);
            case SK::Set: assign_targets(s.targets, eval(s.expr.get(), sc), sc); return Flow::Normal;
            case SK::SetBlock: {
                std::string buf;
                auto inner = std::make_shared<Scope>();  // assignments inside the block stay inside
                inner->parent = sc;
                inner->undef = &s.undef_names;
                exec_body(s.body, inner, buf);
                Value v = Value::str(std::move(buf));
                if (s.expr) v = eval_filter(s.expr.get(), sc, &v);
                assign(s.targets[0].get(), std::move(v), sc);
                return Flow::Normal;
            }
            case SK::Macro: sc->set(s.name, make_macro(s, sc)); return Flow::Normal;
            case SK::CallBlock: {
                const Stmt* sp = &s;
                ScopeP site = sc;
                Value caller = Value::func("caller", [sp, site](Interp& in, CallArgs& a) {
                    auto csc = std::make_shared<Scope>();
                    csc->parent = site;
                    csc->undef = &sp->undef_names;
                    for (size_t k = 0; k < sp->params.size(); ++k) {
                        const Value* v = arg_at(a, k, sp->params[k].c_str());
                        if (v) csc->set(sp->params[k], *v);
                        else if (sp->defaults[k]) csc->set(sp->params[k], in.eval(sp->defaults[k].get(), csc));
                        else csc->set(sp->params[k], Value::undef("parameter '" + sp->params[k] + "' was not provided"));
                    }
                    std::string buf;
                    in.exec_body(sp->body, csc, buf);
                    return Value::str(std::move(buf));
                });
                const Node* call = s.expr.get();
                Value f = eval(call->kids[0].get(), sc);
                CallArgs a;
                eval_args(call, 1, sc, a);
                a.kw.emplace_back("caller", caller);
                // macros accept `caller` as a keyword only through this path
                if (f.t == Value::Fn) {
                    // strip the caller kwarg for the macro binder and pass it separately
                    a.kw.pop_back();
                    Value r = call_with_caller(f, a, caller);
                    emit(out, to_str(r));
                    return Flow::Normal;
                }
                call_value(f, a);
                return Flow::Normal;
            }
            case SK::FilterBlock: {
                std::string buf;
                auto inner = std::make_shared<Scope>();
                inner->parent = sc;
                inner->undef = &s.undef_names;
                exec_body(s.body, inner, buf);
                Value v = Value::str(std::move(buf));
                emit(out, to_str(eval_filter(s.expr.get(), sc, &v)));
                return Flow::Normal;
            }
            case SK::Break: return Flow::Break;
            case SK::Continue: return Flow::Continue;
            case SK::With: {
                auto ws = std::make_shared<Scope>();
                ws->parent = sc;
                ws->undef = &s.undef_names;
                for (size_t k = 0; k < s.targets.size(); ++k) ws->set(s.targets[k]->name, eval(s.conds[k].get(), sc));
                return exec_body(s.body, ws, out);
            }
            case SK::Block: {
                if (s.name != "generation") return exec_body(s.body, sc, out);
                auto inner = std::make_shared<Scope>();  // rendered through caller(): its own frame
                inner->parent = sc;
                inner->undef = &s.undef_names;
                exec_body(s.body, inner, out);
                return Flow::Normal;
            }
        }
        return Flow::Normal;
    }

    // Calls a macro with a caller; the current macro Func wraps call_macro without caller, so we re-dispatch.
    Value call_with_caller(const Value& f, CallArgs& a, const Value& caller) {
        pending_caller = &caller;
        struct Reset {
            const Value*& p;
            ~Reset() { p = nullptr; }
        } r{pending_caller};
        return call_value(f, a);
    }
    const Value* pending_caller = nullptr;

    Flow exec_for(const Stmt& s, const ScopeP& sc, std::string& out) {
        run_loop(s, sc, eval(s.expr.get(), sc), 1, out);
        return Flow::Normal;
    }

    void run_loop(const Stmt& s, const ScopeP& sc, const Value& it, int64_t depth, std::string& out) {
        DepthGuard g(call_depth, kMaxCallDepth, "recursive loop");
        std::vector<Value> items = iterate(it);
        auto ls = std::make_shared<Scope>();
        ls->parent = sc;
        if (s.cond) {
            std::vector<Value> kept;
            for (auto& e : items) {
                assign_targets(s.targets, e, ls);
                if (truthy(eval(s.cond.get(), ls))) kept.push_back(std::move(e));
            }
            items = std::move(kept);
        }
        int64_t n = static_cast<int64_t>(items.size());
        Value loop = Value::dict();
        loop.d->loop = true;
        auto& L = loop.d->items;
        const char* keys[] = {"index", "index0", "revindex", "revindex0", "first", "last", "length", "previtem", "nextitem", "depth", "depth0"};
        for (const char* k : keys) L.emplace_back(k, Value());
        L[6].second = Value::integer(n);
        L[9].second = Value::integer(depth);
        L[10].second = Value::integer(depth - 1);
        if (s.recursive) {
            const Stmt* sp = &s;
            ScopeP outer = sc;
            loop.d->set("\x02" "call", Value::func("loop", [sp, outer, depth](Interp& in, CallArgs& a) {
                if (a.pos.size() != 1) fail("loop() takes exactly one argument");
                std::string buf;
                in.run_loop(*sp, outer, a.pos[0], depth + 1, buf);
                return Value::str(std::move(buf));
            }));
        }
        ls->set("loop", loop);
        ScopeP it_sc;
        bool completed = false;
        for (int64_t k = 0; k < n; ++k) {
            step();
            L[0].second = Value::integer(k + 1);
            L[1].second = Value::integer(k);
            L[2].second = Value::integer(n - k);
            L[3].second = Value::integer(n - k - 1);
            L[4].second = Value::boolean(k == 0);
            L[5].second = Value::boolean(k == n - 1);
            L[7].second = k > 0 ? items[static_cast<size_t>(k - 1)] : Value::undef("there is no previous item");
            L[8].second = k + 1 < n ? items[static_cast<size_t>(k + 1)] : Value::undef("there is no next item");
            // jinja2: assignments in the loop body do not survive to the next iteration
            if (!it_sc || it_sc.use_count() > 1) {
                it_sc = std::make_shared<Scope>();
                it_sc->parent = ls;
                it_sc->undef = &s.undef_names;
            } else {
                it_sc->vars.clear();
            }
            assign_targets(s.targets, items[static_cast<size_t>(k)], it_sc);
            Flow f = exec_body(s.body, it_sc, out);
            if (f == Flow::Normal) completed = true;
            if (f == Flow::Break) break;
        }
        // jinja2 quirk: `else` runs unless some iteration reached the end of the body (break/continue skip it)
        if (!completed) exec_body(s.else_body, ls, out);
    }
};

std::string render_program(const Program& prog, const JsonValue& context) {
    if (!context.is_object()) throw ChatTemplateError("chat template context must be a JSON object");
    Interp in;
    in.ctx = from_json(context);
    if (!in.ctx.d->find("tools")) in.ctx.d->set("tools", Value::none());
    if (!in.ctx.d->find("documents")) in.ctx.d->set("documents", Value::none());
    struct NamespaceCleanup {
        Interp& in;
        ~NamespaceCleanup() {
            for (auto& w : in.namespaces) {
                if (auto p = w.lock()) {
                    auto items = std::move(p->items);
                    p->items.clear();
                }
            }
        }
    } cleanup{in};
    struct StepsBinding {
        explicit StepsBinding(uint64_t* p) : saved(t_steps) { t_steps = p; }
        ~StepsBinding() { t_steps = saved; }
        uint64_t* saved;
    } binding(&in.steps);
    in.root = std::make_shared<Scope>();
    in.root->undef = &prog.undef_names;
    std::string out;
    out.reserve(4096);
    in.exec_body(prog.body, in.root, out);
    return out;
}

}  // namespace jinja

// ---------------------------------------------------------------- public API

ChatTemplate::ChatTemplate(const std::string& source) : prog_(jinja::parse_template(source)) {}
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

std::string ChatTemplate::render(const JsonValue& context) const {
    if (!prog_) throw ChatTemplateError("chat template was moved from");
    try {
        return jinja::render_program(*prog_, context);
    } catch (const ChatTemplateError&) {
        throw;
    } catch (const JsonError& e) {
        throw ChatTemplateError(e.what());
    } catch (const std::bad_alloc&) {
        throw ChatTemplateError("out of memory while rendering the chat template");
    } catch (const std::exception& e) {
        throw ChatTemplateError(std::string("chat template render error: ") + e.what());
    }
}

}  // namespace ovgc
