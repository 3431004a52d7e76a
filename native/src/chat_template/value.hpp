// The one value model of the template engine (Python/jinja2 semantics over a small tagged struct) and the
// operations on values: truthiness, str()/repr(), equality and ordering, JSON in and out, iteration, slicing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat_template/limits.hpp"
#include "json/json.hpp"

namespace ovgc {
namespace jinja {

struct Value;
struct DictData;
struct Interp;

struct CallArgs {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
};

using NativeFn = std::function<Value(Interp&, CallArgs&)>;

struct Func {
    std::string name;
    NativeFn fn;
};

struct Value {
    enum T : uint8_t { Undef, None, Bool, Int, Float, Str, List, Dict, Fn };
    T t = Undef;
    bool b = false;    // Bool value; Str: is Markup; List: is a generator (lazy filter result)
    bool tup = false;  // List: is a tuple
    int64_t i = 0;
    double f = 0;
    std::string s;  // Str: content; Undef: the error message used when the value is misused
    std::shared_ptr<std::vector<Value>> l;
    std::shared_ptr<DictData> d;
    std::shared_ptr<Func> fn;

    Value() = default;
    Value(const Value&) = default;
    Value(Value&&) noexcept = default;
    Value& operator=(const Value&) = default;
    Value& operator=(Value&&) noexcept = default;
    // Releasing a deeply nested value (e.g. a list built as [[[...]]] in a loop) must not recurse without bound:
    // below a fixed depth, container releases are deferred and drained iteratively (value.cpp).
    ~Value() {
        if (l || d || fn) release();
    }
    void release() noexcept;

    static Value undef(std::string hint) {
        Value v;
        v.s = std::move(hint);
        return v;
    }
    static Value none() {
        Value v;
        v.t = None;
        return v;
    }
    static Value boolean(bool x) {
        Value v;
        v.t = Bool;
        v.b = x;
        return v;
    }
    static Value integer(int64_t x) {
        Value v;
        v.t = Int;
        v.i = x;
        return v;
    }
    static Value flt(double x) {
        Value v;
        v.t = Float;
        v.f = x;
        return v;
    }
    static Value str(std::string x) {
        Value v;
        v.t = Str;
        v.s = std::move(x);
        return v;
    }
    static Value list(std::vector<Value> items = {}) {
        Value v;
        v.t = List;
        v.l = std::make_shared<std::vector<Value>>(std::move(items));
        return v;
    }
    static Value dict();
    static Value func(std::string name, NativeFn fn) {
        Value v;
        v.t = Fn;
        v.fn = std::make_shared<Func>(Func{std::move(name), std::move(fn)});
        return v;
    }
    bool is_undef() const { return t == Undef; }
};

struct DictData {
    std::vector<std::pair<std::string, Value>> items;
    bool ns = false;    // namespace(): attribute assignment allowed
    bool loop = false;  // the loop object
    const Value* find(std::string_view k) const {
        for (const auto& kv : items)
            if (kv.first == k) return &kv.second;
        return nullptr;
    }
    Value* find(std::string_view k) {
        for (auto& kv : items)
            if (kv.first == k) return &kv.second;
        return nullptr;
    }
    void set(std::string_view k, Value v) {
        if (Value* p = find(k)) {
            *p = std::move(v);
            return;
        }
        items.emplace_back(std::string(k), std::move(v));
    }
};

inline Value Value::dict() {
    Value v;
    v.t = Dict;
    v.d = std::make_shared<DictData>();
    return v;
}


// ---- type names, errors, truthiness, numbers
const char* type_name(const Value& v);        // Python's type name: "str", "dict", "NoneType", ...
std::string obj_type_repr(const Value& v);    // "None" or "<type> object", for error messages
[[noreturn]] void undefined_error(const Value& u);  // raises the message an Undefined carries
bool truthy(const Value& v);
bool is_num(const Value& v);                  // int, float or bool
bool is_intlike(const Value& v);              // int or bool
int64_t as_i(const Value& v);
double as_f(const Value& v);

// ---- dict keys: a str key is kept as is, other hashable scalars (int, float, bool, None) are encoded
std::string key_enc(const Value& k);
Value key_dec(const std::string& s);
std::string key_json(const std::string& s);

// ---- constructors and kinds beyond Value's own
Value gen(std::vector<Value> items);    // a generator (lazy filter result)
bool is_gen(const Value& v);
Value tuple(std::vector<Value> items);
Value markup(std::string s);            // Markup (|safe, |escape): not escaped again
bool is_markup(const Value& v);

// ---- text forms: str(), repr(), HTML escaping
std::string html_escape(const std::string& s);
std::string py_repr_str(const std::string& s);
bool u_nonprintable(uint32_t cp);
std::string py_repr_unicode(const std::string& s);
std::string repr(const Value& v);
std::string to_str(const Value& v);

// ---- comparison (Python semantics; compare raises TypeError-like errors naming `op`)
bool equals(const Value& a, const Value& b);
int compare(const Value& a, const Value& b, const char* op = "<");

// ---- JSON in and out (to_json raises for values JSON cannot hold)
Value from_json(const JsonValue& j);
JsonValue to_json(const Value& v, int depth = 0);

// ---- containers: iteration, len(), `in`, slicing
std::vector<Value> iterate(const Value& v);
int64_t length(const Value& v);
bool contains(const Value& container, const Value& item);
void slice_indices(int64_t len, const Value* start, const Value* stop, const Value* step, int64_t& b, int64_t& e,
                   int64_t& st);
Value do_slice(const Value& obj, const Value* start, const Value* stop, const Value* step);

}  // namespace jinja
}  // namespace ovgc
