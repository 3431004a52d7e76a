// jinja2's builtin tests (`x is defined`, `x is string`, ...).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <ctime>
#include <set>

#include "chat_template/interp.hpp"

namespace ovgc {
namespace jinja {

bool Interp::test(const std::string& name, const Value& v, CallArgs& a) {
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

}  // namespace jinja
}  // namespace ovgc
