// Internal declarations of the Jinja2 subset interpreter behind ovgc::ChatTemplate.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat_template/chat_template.hpp"
#include "common/utf8.hpp"
#include "json/json.hpp"

namespace ovgc {
namespace jinja {

struct Value;
struct DictData;
struct Interp;
struct Node;
struct Stmt;
using NodeP = std::unique_ptr<Node>;
using StmtP = std::unique_ptr<Stmt>;
using Body = std::vector<StmtP>;

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
    // below a fixed depth, container releases are deferred and drained iteratively (interp.cpp).
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

// ---- AST

enum class NK { Const, Name, List, Tuple, Dict, GetAttr, GetItem, Slice, Call, Filter, Test, Bin, Neg, Pos,
                Compare, And, Or, Not, Cond, Concat };

struct Node {
    NK k;
    int line = 0, col = 0;
    Value cval;
    std::string name;
    char op = 0;
    bool negated = false;
    std::vector<NodeP> kids;  // may contain nullptrs (slice parts, filter-block subject, missing else)
    std::vector<std::string> ops;
    std::vector<std::pair<std::string, NodeP>> kwargs;
};

enum class SK { Text, Out, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, Break, Continue, With, Block };

struct Stmt {
    SK k;
    int line = 0, col = 0;
    std::string text;
    NodeP expr;
    std::vector<NodeP> conds;
    std::vector<Body> bodies;
    Body body;
    Body else_body;
    std::vector<NodeP> targets;
    NodeP cond;
    std::string name;
    std::vector<std::string> params;
    std::vector<NodeP> defaults;
    bool recursive = false;     // For: `recursive` loop
    bool uses_varargs = false;  // Macro: body references varargs / kwargs
    bool uses_kwargs = false;
    // Names of the frame opened by this statement's body (for/macro/call/with/set-block/filter-block) that jinja2
    // initialises as undefined: first met as an unconditional store, unknown to every enclosing frame. Until the
    // store runs, reading them yields undefined (not the context value).
    std::vector<std::string> undef_names;
};

struct Program {
    Body body;
    std::vector<std::string> undef_names;  // same, for the top-level frame
};

// parser.cpp
std::unique_ptr<Program> parse_template(const std::string& source);

// interp.cpp
std::string render_program(const Program& prog, const JsonValue& context);

}  // namespace jinja
}  // namespace ovgc
