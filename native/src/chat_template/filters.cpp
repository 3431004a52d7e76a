// jinja2's builtin filters.
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

// One builtin filter: fn(interp, the name it was called by, the subject, the arguments). jinja2's lazy
// filters (generators) raise only when iterated; Interp::filter gives them a generator carrying the error.
using FilterFn = Value (*)(Interp&, const std::string&, const Value&, CallArgs&);
struct FilterEntry {
    FilterFn fn;
    bool lazy;
};

// default, d
Value f_default(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    const Value* dv = arg_at(a, 0, "default_value");
    bool boolean = arg_bool(a, 1, "boolean", false);
    if (v.is_undef() || (boolean && !truthy(v))) return dv ? *dv : Value::str("");
    return v;
}

// length, count
Value f_length(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    return Value::integer(length(v));
}

// string
Value f_string(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    return v.t == Value::Str ? v : Value::str(to_str(v));
}

// safe
Value f_safe(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    return markup(to_str(v));
}

// upper, lower, capitalize, title, trim, escape, e, forceescape, wordcount
Value f_text(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
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

// replace
Value f_replace(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    const Value* o = arg_at(a, 0, "old");
    const Value* nw = arg_at(a, 1, "new");
    const Value* cnt = arg_at(a, 2, "count");
    if (!o || !nw) fail("replace filter needs old and new");
    return Value::str(py_replace(to_str(v), to_str(*o), to_str(*nw),
                                 cnt && cnt->t != Value::None ? as_i(*cnt) : -1));
}

// tojson
Value f_tojson(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
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

// join
Value f_join(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    const Value* d = arg_at(a, 0, "d");
    const Value* attr = arg_at(a, 1, "attribute");
    std::string sep = d ? to_str(*d) : "";
    std::string out;
    bool first = true;
    for (const auto& e : iterate(v)) {
        if (!first) out += sep;
        first = false;
        out += to_str(attr && attr->t != Value::None ? in.attr_path(e, to_str(*attr)) : e);
        if (out.size() > kMaxOutput) fail("result too large");
    }
    return Value::str(out);
}

// first
Value f_first(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    if (v.t == Value::Undef) return Value::undef("No first item, sequence was empty.");
    auto items = iterate(v);
    if (items.empty()) return Value::undef("No first item, sequence was empty.");
    return items.front();
}

// last
Value f_last(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    if (v.t == Value::Undef) return Value::undef("No last item, sequence was empty.");
    if (is_gen(v)) fail("'generator' object is not reversible");
    auto items = iterate(v);
    if (items.empty()) return Value::undef("No last item, sequence was empty.");
    return items.back();
}

// list
Value f_list(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    return Value::list(iterate(v));
}

// items
Value f_items(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    if (v.t == Value::Undef) return Value::list();
    if (v.t != Value::Dict || v.d->ns || v.d->loop) fail("Can only get item pairs from a mapping.");
    CallArgs none;
    Value r = in.call_method(v, "items", none);
    r.b = true;
    return r;
}

// reverse
Value f_reverse(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
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

// int
Value f_int(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
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

// float
Value f_float(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
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

// abs
Value f_abs(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    if (v.t == Value::Float) return Value::flt(std::fabs(v.f));
    if (is_intlike(v)) {
        if (as_i(v) == INT64_MIN) return Value::flt(-static_cast<double>(as_i(v)));
        return Value::integer(std::llabs(as_i(v)));
    }
    if (v.t == Value::Undef) undefined_error(v);
    fail(std::string("bad operand type for abs(): '") + type_name(v) + "'");
}

// round
Value f_round(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
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

// indent
Value f_indent(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
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

// center
Value f_center(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    int64_t w = 80;
    if (const Value* x = arg_at(a, 0, "width")) w = as_i(*x);
    CallArgs ca;
    ca.pos.push_back(Value::integer(w));
    return in.str_method(to_str(v), "center", ca);
}

// format
Value f_format(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    std::vector<Value> args = a.pos;
    if (!a.kw.empty()) {
        Value d = Value::dict();
        for (const auto& kv : a.kw) d.d->set(kv.first, kv.second);
        return Value::str(percent_format(to_str(v), d));
    }
    return Value::str(percent_format(to_str(v), tuple(std::move(args))));
}

// attr
Value f_attr(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    const Value* n = arg_at(a, 0, "name");
    if (!n) fail("attr filter needs a name");
    std::string an = to_str(*n);
    // python getattr only: dict keys are not attributes
    if (v.t == Value::Dict && !v.d->ns && !v.d->loop &&
        !(an == "items" || an == "keys" || an == "values" || an == "get" || an == "copy"))
        return Value::undef("'dict object' has no attribute '" + an + "'");
    return in.get_attr(v, an);
}

// select, reject, selectattr, rejectattr
Value f_select(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
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
        Value x = is_attr ? in.attr_path(e, attr) : e;
        bool r = has_test ? in.test(tname, x, targs) : truthy(x);
        if (r == want) out.push_back(e);
    }
    return gen(std::move(out));
}

// map
Value f_map(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
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
        for (const auto& e : items) out.push_back(in.attr_path(e, at, dflt));
        return gen(std::move(out));
    }
    if (a.pos.empty()) fail("map requires a filter argument");
    std::string fname = to_str(a.pos[0]);
    CallArgs fa;
    fa.pos.assign(a.pos.begin() + 1, a.pos.end());
    fa.kw = a.kw;
    for (const auto& e : items) {
        CallArgs c = fa;
        out.push_back(in.filter(fname, e, c));
    }
    return gen(std::move(out));
}

// unique
Value f_unique(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    bool cs = arg_bool(a, 0, "case_sensitive", false);
    const Value* attr = arg_at(a, 1, "attribute");
    std::vector<Value> out, seen;
    std::set<std::string> seen_keys;  // encoded scalar keys: O(log n) lookups
    for (const auto& e : iterate(v)) {
        Value key = in.sort_key(attr && attr->t != Value::None ? in.attr_path(e, to_str(*attr)) : e, cs);
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

// sort
Value f_sort(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    bool rev = arg_bool(a, 0, "reverse", false);
    bool cs = arg_bool(a, 1, "case_sensitive", false);
    const Value* attr = arg_at(a, 2, "attribute");
    auto items = iterate(v);
    std::vector<std::pair<Value, Value>> keyed;
    for (auto& e : items)
        keyed.emplace_back(in.sort_key(attr && attr->t != Value::None ? in.attr_path(e, to_str(*attr)) : e, cs), e);
    // jinja2 sorts by [key] lists: equal keys (even undefined ones) are never ordered with '<'
    auto less = [&](const Value& p, const Value& q) { return !equals(p, q) && compare(p, q) < 0; };
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        return rev ? less(y.first, x.first) : less(x.first, y.first);
    });
    std::vector<Value> out;
    for (auto& kv : keyed) out.push_back(std::move(kv.second));
    return Value::list(std::move(out));
}

// dictsort
Value f_dictsort(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    bool cs = arg_bool(a, 0, "case_sensitive", false);
    std::string by = "key";
    if (const Value* b = arg_at(a, 1, "by")) by = to_str(*b);
    bool rev = arg_bool(a, 2, "reverse", false);
    if (v.t != Value::Dict) fail("dictsort: expected a mapping");
    CallArgs none;
    auto items = *in.call_method(v, "items", none).l;
    size_t pos = by == "value" ? 1 : 0;
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
        Value kx = in.sort_key((*x.l)[pos], cs), ky = in.sort_key((*y.l)[pos], cs);
        return rev ? compare(ky, kx) < 0 : compare(kx, ky) < 0;
    });
    return Value::list(std::move(items));
}

// sum
Value f_sum(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    const Value* attr = arg_at(a, 0, "attribute");
    const Value* start = arg_at(a, 1, "start");
    Value acc = start ? *start : Value::integer(0);
    for (const auto& e : iterate(v))
        acc = in.binop('+', acc, attr && attr->t != Value::None ? in.attr_path(e, to_str(*attr)) : e);
    return acc;
}

// min, max
Value f_min_max(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    bool cs = arg_bool(a, 0, "case_sensitive", false);
    const Value* attr = arg_at(a, 1, "attribute");
    auto items = iterate(v);
    if (items.empty()) return Value::undef("No aggregated item, sequence was empty.");
    size_t best = 0;
    auto key = [&](const Value& e) { return in.sort_key(attr && attr->t != Value::None ? in.attr_path(e, to_str(*attr)) : e, cs); };
    for (size_t k = 1; k < items.size(); ++k) {
        int c = compare(key(items[k]), key(items[best]));
        if (name == "min" ? c < 0 : c > 0) best = k;
    }
    return items[best];
}

// batch, slice
Value f_batch_slice(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
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

const FilterEntry* find_filter(const std::string& name) {
    static const std::unordered_map<std::string, FilterEntry> table = {
        {"default", {f_default, false}},
        {"d", {f_default, false}},
        {"length", {f_length, false}},
        {"count", {f_length, false}},
        {"string", {f_string, false}},
        {"safe", {f_safe, false}},
        {"upper", {f_text, false}},
        {"lower", {f_text, false}},
        {"capitalize", {f_text, false}},
        {"title", {f_text, false}},
        {"trim", {f_text, false}},
        {"escape", {f_text, false}},
        {"e", {f_text, false}},
        {"forceescape", {f_text, false}},
        {"wordcount", {f_text, false}},
        {"replace", {f_replace, false}},
        {"tojson", {f_tojson, false}},
        {"join", {f_join, false}},
        {"first", {f_first, false}},
        {"last", {f_last, false}},
        {"list", {f_list, false}},
        {"items", {f_items, true}},
        {"reverse", {f_reverse, false}},
        {"int", {f_int, false}},
        {"float", {f_float, false}},
        {"abs", {f_abs, false}},
        {"round", {f_round, false}},
        {"indent", {f_indent, false}},
        {"center", {f_center, false}},
        {"format", {f_format, false}},
        {"attr", {f_attr, false}},
        {"select", {f_select, true}},
        {"reject", {f_select, true}},
        {"selectattr", {f_select, true}},
        {"rejectattr", {f_select, true}},
        {"map", {f_map, true}},
        {"unique", {f_unique, true}},
        {"sort", {f_sort, false}},
        {"dictsort", {f_dictsort, false}},
        {"sum", {f_sum, false}},
        {"min", {f_min_max, false}},
        {"max", {f_min_max, false}},
        {"batch", {f_batch_slice, true}},
        {"slice", {f_batch_slice, true}},
    };
    auto it = table.find(name);
    return it == table.end() ? nullptr : &it->second;
}

}  // namespace

Value Interp::eval_filter(const Node* n, const ScopeP& sc, const Value* inject) {
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
Value Interp::sort_key(const Value& v, bool case_sensitive) {
    if (!case_sensitive && v.t == Value::Str) return Value::str(ascii_lower(v.s));
    return v;
}

// jinja2's lazy filters (generators) raise only when iterated: model that with a generator carrying the error.
Value Interp::filter(const std::string& name, const Value& v, CallArgs& a) {
    const FilterEntry* f = find_filter(name);
    if (f && f->lazy) {
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

bool is_filter_name(const std::string& name) { return find_filter(name) != nullptr; }

Value Interp::filter_impl(const std::string& name, const Value& v, CallArgs& a) {
    step();
    const FilterEntry* f = find_filter(name);
    if (!f) fail("No filter named '" + name + "'.");
    return f->fn(*this, name, v, a);
}

}  // namespace jinja
}  // namespace ovgc
