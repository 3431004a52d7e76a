// Statements: output, if, for (loop object, recursion), set, macro/call, filter blocks, with.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <ctime>
#include <set>

#include "chat_template/interp.hpp"

namespace ovgc {
namespace jinja {

void Interp::assign(const Node* target, Value v, const ScopeP& sc) {
    if (target->k == NK::Name) {
        sc->set(target->name, std::move(v));
        return;
    }
    // ns.attr
    Value obj = lookup(target->kids[0]->name, sc);
    if (obj.t != Value::Dict || !obj.d->ns) fail("cannot assign attribute on non-namespace object");
    obj.d->set(target->name, std::move(v));
}

void Interp::assign_targets(const std::vector<NodeP>& targets, const Value& v, const ScopeP& sc) {
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

void Interp::emit(std::string& out, const std::string& s) {
    out += s;
    if (out.size() > kMaxOutput) fail("template output too large");
}

Flow Interp::exec_body(const Body& body, const ScopeP& sc, std::string& out) {
    for (const auto& st : body) {
        Flow f = exec(*st, sc, out);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

Flow Interp::exec(const Stmt& s, const ScopeP& sc, std::string& out) {
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
Value Interp::call_with_caller(const Value& f, CallArgs& a, const Value& caller) {
    pending_caller = &caller;
    struct Reset {
        const Value*& p;
        ~Reset() { p = nullptr; }
    } r{pending_caller};
    return call_value(f, a);
}

Flow Interp::exec_for(const Stmt& s, const ScopeP& sc, std::string& out) {
    run_loop(s, sc, eval(s.expr.get(), sc), 1, out);
    return Flow::Normal;
}

void Interp::run_loop(const Stmt& s, const ScopeP& sc, const Value& it, int64_t depth, std::string& out) {
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

}  // namespace jinja
}  // namespace ovgc
