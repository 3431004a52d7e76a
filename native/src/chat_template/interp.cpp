// Names, attributes and items, calls and macros, expression evaluation; render_program and the public API.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <ctime>
#include <set>

#include "chat_template/interp.hpp"

namespace ovgc {
namespace jinja {

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


void Interp::step() {
    if (++steps > kMaxSteps) fail("template exceeded the execution step limit");
}

Value Interp::lookup(const std::string& name, const ScopeP& sc) {
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

Value Interp::global(const std::string& name) {
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

Value Interp::unsafe(const Value& obj, const std::string& name) {
    return Value::undef("access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe.");
}

Value Interp::bound(const Value& obj, const std::string& name) {
    return Value::func(name, [obj, name](Interp& in, CallArgs& a) { return in.call_method(obj, name, a); });
}

// obj.name (jinja getattr: attribute first, then item)
Value Interp::get_attr(const Value& obj, const std::string& name) {
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
Value Interp::get_item(const Value& obj, const Value& key) {
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

Value Interp::call_method(const Value& obj, const std::string& name, CallArgs& a) {
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

Value Interp::call_value(const Value& f, CallArgs& a) {
    if (f.t == Value::Fn) return f.fn->fn(*this, a);
    if (f.t == Value::Dict && f.d->loop) {
        if (const Value* c = f.d->find("\x02" "call")) return c->fn->fn(*this, a);
        fail("'LoopContext' object is not callable (the loop is not recursive)");
    }
    if (f.t == Value::Undef) undefined_error(f);
    fail(std::string("'") + type_name(f) + "' object is not callable");
}

Value Interp::call_macro(const Stmt& m, const std::weak_ptr<Scope>& def, CallArgs& a, const Value* caller) {
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

Value Interp::make_macro(const Stmt& m, const ScopeP& sc) {
    std::weak_ptr<Scope> w = sc;
    const Stmt* mp = &m;
    return Value::func(m.name, [mp, w](Interp& in, CallArgs& a) {
        const Value* caller = in.pending_caller;
        in.pending_caller = nullptr;
        return in.call_macro(*mp, w, a, caller);
    });
}

void Interp::eval_args(const Node* n, size_t first, const ScopeP& sc, CallArgs& a) {
    a.pos.reserve(n->kids.size() - first);
    for (size_t k = first; k < n->kids.size(); ++k) a.pos.push_back(eval(n->kids[k].get(), sc));
    for (const auto& kv : n->kwargs) a.kw.emplace_back(kv.first, eval(kv.second.get(), sc));
}

Value Interp::eval(const Node* n, const ScopeP& sc) {
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

Value Interp::binop(char op, const Value& a, const Value& b) {
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

Value Interp::attr_path(const Value& v, const std::string& attr, const Value* dflt) {
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
