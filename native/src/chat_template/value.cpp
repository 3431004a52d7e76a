// Value operations with Python/jinja2 semantics, and bounded-depth release of nested values.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <ctime>
#include <set>

#include "chat_template/string_methods.hpp"
#include "chat_template/value.hpp"

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

thread_local uint64_t* t_steps = nullptr;

void charge(uint64_t n) {
    if (t_steps && (*t_steps += n) > kMaxSteps) fail("template exceeded the execution step limit");
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

namespace {
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
}  // namespace

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
int compare(const Value& a, const Value& b, const char* op) {
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

JsonValue to_json(const Value& v, int depth) {
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

}  // namespace jinja
}  // namespace ovgc
