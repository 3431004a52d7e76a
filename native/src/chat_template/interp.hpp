// The tree-walking interpreter: scopes, the render state (Interp) and its parts, defined in
// interp.cpp (names, attributes, calls, expressions), statements.cpp, filters.cpp, builtin_tests.cpp and
// string_methods.cpp.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat_template/ast.hpp"
#include "chat_template/string_methods.hpp"
#include "chat_template/value.hpp"

namespace ovgc {
namespace jinja {

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

const Value* arg_at(const CallArgs& a, size_t idx, const char* name);
bool arg_bool(const CallArgs& a, size_t idx, const char* name, bool dflt);

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
    const Value* pending_caller = nullptr;

    void step();
    Value lookup(const std::string& name, const ScopeP& sc);
    Value global(const std::string& name);
    Value unsafe(const Value& obj, const std::string& name);
    static bool is_str_method(const std::string& n);
    Value bound(const Value& obj, const std::string& name);
    // obj.name (jinja getattr: attribute first, then item)
    Value get_attr(const Value& obj, const std::string& name);
    // obj[key] (jinja getitem: item first, then attribute)
    Value get_item(const Value& obj, const Value& key);
    Value call_method(const Value& obj, const std::string& name, CallArgs& a);
    Value str_method(const std::string& s, const std::string& name, CallArgs& a);
    Value call_value(const Value& f, CallArgs& a);
    Value call_macro(const Stmt& m, const std::weak_ptr<Scope>& def, CallArgs& a, const Value* caller);
    Value make_macro(const Stmt& m, const ScopeP& sc);
    void eval_args(const Node* n, size_t first, const ScopeP& sc, CallArgs& a);
    Value eval(const Node* n, const ScopeP& sc);
    Value binop(char op, const Value& a, const Value& b);
    bool test(const std::string& name, const Value& v, CallArgs& a);
    Value attr_path(const Value& v, const std::string& attr, const Value* dflt = nullptr);
    Value eval_filter(const Node* n, const ScopeP& sc, const Value* inject);
    // sort key helper for sort/unique/dictsort
    Value sort_key(const Value& v, bool case_sensitive);
    // jinja2's lazy filters (generators) raise only when iterated: model that with a generator carrying the error.
    Value filter(const std::string& name, const Value& v, CallArgs& a);
    Value filter_impl(const std::string& name, const Value& v, CallArgs& a);
    void assign(const Node* target, Value v, const ScopeP& sc);
    void assign_targets(const std::vector<NodeP>& targets, const Value& v, const ScopeP& sc);
    void emit(std::string& out, const std::string& s);
    Flow exec_body(const Body& body, const ScopeP& sc, std::string& out);
    Flow exec(const Stmt& s, const ScopeP& sc, std::string& out);
    // Calls a macro with a caller; the current macro Func wraps call_macro without caller, so we re-dispatch.
    Value call_with_caller(const Value& f, CallArgs& a, const Value& caller);
    Flow exec_for(const Stmt& s, const ScopeP& sc, std::string& out);
    void run_loop(const Stmt& s, const ScopeP& sc, const Value& it, int64_t depth, std::string& out);
};

// Whether `name` is a builtin filter (filters.cpp; jinja2's `is filter` test).
bool is_filter_name(const std::string& name);

// Renders a parsed program with a JSON object as context (interp.cpp).
std::string render_program(const Program& prog, const JsonValue& context);

}  // namespace jinja
}  // namespace ovgc
