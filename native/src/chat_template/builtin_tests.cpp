// jinja2's builtin tests (`x is defined`, `x is string`, ...).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <ctime>
#include <set>
#include <unordered_map>

#include "chat_template/interp.hpp"

namespace ovgc {
namespace jinja {

namespace {

// One builtin test: fn(interp, the name it was called by, the subject, the arguments).
using TestFn = bool (*)(Interp&, const std::string&, const Value&, CallArgs&);

const Value& arg0(const std::string& name, CallArgs& a) {
    if (a.pos.empty()) fail("test '" + name + "' needs an argument");
    return a.pos[0];
}

bool plain_mapping(const Value& v) { return v.t == Value::Dict && !v.d->ns && !v.d->loop; }

bool t_defined(Interp&, const std::string&, const Value& v, CallArgs&) { return !v.is_undef(); }
bool t_undefined(Interp&, const std::string&, const Value& v, CallArgs&) { return v.is_undef(); }
bool t_none(Interp&, const std::string&, const Value& v, CallArgs&) { return v.t == Value::None; }
bool t_boolean(Interp&, const std::string&, const Value& v, CallArgs&) { return v.t == Value::Bool; }
bool t_true(Interp&, const std::string&, const Value& v, CallArgs&) { return v.t == Value::Bool && v.b; }
bool t_false(Interp&, const std::string&, const Value& v, CallArgs&) { return v.t == Value::Bool && !v.b; }
bool t_integer(Interp&, const std::string&, const Value& v, CallArgs&) { return v.t == Value::Int; }
bool t_float(Interp&, const std::string&, const Value& v, CallArgs&) { return v.t == Value::Float; }
bool t_number(Interp&, const std::string&, const Value& v, CallArgs&) { return is_num(v); }
bool t_string(Interp&, const std::string&, const Value& v, CallArgs&) { return v.t == Value::Str; }
bool t_mapping(Interp&, const std::string&, const Value& v, CallArgs&) { return plain_mapping(v); }
bool t_iterable(Interp&, const std::string&, const Value& v, CallArgs&) {
    return v.t == Value::Str || v.t == Value::List || v.t == Value::Undef || plain_mapping(v);
}
bool t_sequence(Interp&, const std::string&, const Value& v, CallArgs&) {
    return v.t == Value::Str || v.t == Value::Undef || (v.t == Value::List && !v.b) || plain_mapping(v);
}
bool t_callable(Interp&, const std::string&, const Value& v, CallArgs&) {
    return v.t == Value::Fn || v.t == Value::Undef;
}
bool t_sameas(Interp&, const std::string& name, const Value& v, CallArgs& a) {
    const Value& o = arg0(name, a);
    if (v.t != o.t) return false;
    if (v.t == Value::List) return v.l == o.l;
    if (v.t == Value::Dict) return v.d == o.d;
    if (v.t == Value::Str) return false;
    return equals(v, o);
}
bool t_eq(Interp&, const std::string& name, const Value& v, CallArgs& a) { return equals(v, arg0(name, a)); }
bool t_ne(Interp&, const std::string& name, const Value& v, CallArgs& a) { return !equals(v, arg0(name, a)); }
bool t_lt(Interp&, const std::string& name, const Value& v, CallArgs& a) { return compare(v, arg0(name, a)) < 0; }
bool t_le(Interp&, const std::string& name, const Value& v, CallArgs& a) { return compare(v, arg0(name, a)) <= 0; }
bool t_gt(Interp&, const std::string& name, const Value& v, CallArgs& a) { return compare(v, arg0(name, a)) > 0; }
bool t_ge(Interp&, const std::string& name, const Value& v, CallArgs& a) { return compare(v, arg0(name, a)) >= 0; }
bool t_in(Interp&, const std::string& name, const Value& v, CallArgs& a) { return contains(arg0(name, a), v); }
// odd, even, divisibleby
bool t_parity(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    if (v.t == Value::Undef) undefined_error(v);
    if (!is_num(v)) fail(std::string("unsupported operand type(s) for %: '") + type_name(v) + "' and 'int'");
    if (name == "divisibleby") return equals(in.binop('%', v, arg0(name, a)), Value::integer(0));
    Value r = in.binop('%', v, Value::integer(2));
    return equals(r, Value::integer(name == "odd" ? 1 : 0));
}
// lower, upper: str(value).islower() / .isupper()
bool t_case(Interp&, const std::string& name, const Value& v, CallArgs&) {
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
bool t_escaped(Interp&, const std::string&, const Value&, CallArgs&) { return false; }
bool t_filter(Interp&, const std::string&, const Value& v, CallArgs&);
bool t_test(Interp&, const std::string&, const Value& v, CallArgs&);

const std::unordered_map<std::string, TestFn>& tests() {
    static const std::unordered_map<std::string, TestFn> table = {
        {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none}, {"boolean", t_boolean},
        {"true", t_true}, {"false", t_false}, {"integer", t_integer}, {"float", t_float}, {"number", t_number},
        {"string", t_string}, {"mapping", t_mapping}, {"iterable", t_iterable}, {"sequence", t_sequence},
        {"callable", t_callable}, {"sameas", t_sameas}, {"eq", t_eq}, {"equalto", t_eq}, {"==", t_eq},
        {"ne", t_ne}, {"!=", t_ne}, {"lt", t_lt}, {"lessthan", t_lt}, {"<", t_lt}, {"le", t_le}, {"<=", t_le},
        {"gt", t_gt}, {"greaterthan", t_gt}, {">", t_gt}, {"ge", t_ge}, {">=", t_ge}, {"in", t_in},
        {"odd", t_parity}, {"even", t_parity}, {"divisibleby", t_parity}, {"lower", t_case}, {"upper", t_case},
        {"escaped", t_escaped}, {"filter", t_filter}, {"test", t_test},
    };
    return table;
}

bool t_filter(Interp&, const std::string&, const Value& v, CallArgs&) {
    return v.t == Value::Str && is_filter_name(v.s);
}
bool t_test(Interp&, const std::string&, const Value& v, CallArgs&) {
    return v.t == Value::Str && tests().count(v.s) != 0;
}

}  // namespace

bool Interp::test(const std::string& name, const Value& v, CallArgs& a) {
    const auto& table = tests();
    auto it = table.find(name);
    if (it == table.end()) fail("No test named '" + name + "'.");
    return it->second(*this, name, v, a);
}

}  // namespace jinja
}  // namespace ovgc
