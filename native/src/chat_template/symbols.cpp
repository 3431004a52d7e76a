// Symbol analysis (see symbols.hpp).
#include "chat_template/symbols.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace ovgc {
namespace jinja {

namespace {

// ---------------------------------------------------------------- symbol analysis (jinja2 idtracking subset)

class SymbolAnalysis {
public:
    void run(Program& prog) {
        std::vector<const Kinds*> ancestors;
        analyze_frame(prog.body, {}, {}, ancestors, prog.undef_names);
    }

private:
    // first occurrence of a name in a frame: 'L' load (resolved from outside), 'S' store, 'P' parameter
    using Kinds = std::vector<std::pair<std::string, char>>;
    struct Frame {
        Kinds kinds;
        std::vector<std::string> stores;
        std::vector<Stmt*> children;  // statements opening child frames
    };

    static char* find(Kinds& k, const std::string& n) {
        for (auto& e : k)
            if (e.first == n) return &e.second;
        return nullptr;
    }
    static bool has(const Kinds& k, const std::string& n) {
        for (const auto& e : k)
            if (e.first == n) return true;
        return false;
    }
    static bool has_store(const Frame& f, const std::string& n) {
        return std::find(f.stores.begin(), f.stores.end(), n) != f.stores.end();
    }

    void load(Frame& f, const std::string& n) {
        if (!find(f.kinds, n)) f.kinds.emplace_back(n, 'L');
    }
    void store(Frame& f, const std::string& n) {
        if (!has_store(f, n)) f.stores.push_back(n);
        if (!find(f.kinds, n)) f.kinds.emplace_back(n, 'S');
    }

    void visit_expr(const Node* n, Frame& f) {
        if (!n) return;
        if (n->k == NK::Name) load(f, n->name);
        for (const auto& k : n->kids) visit_expr(k.get(), f);
        for (const auto& kv : n->kwargs) visit_expr(kv.second.get(), f);
    }

    void visit_body(Body& body, Frame& f) {
        for (auto& sp : body) {
            Stmt& st = *sp;
            switch (st.k) {
                case SK::Text:
                case SK::Break:
                case SK::Continue: break;
                case SK::Out: visit_expr(st.expr.get(), f); break;
                case SK::If: {
                    visit_expr(st.conds[0].get(), f);
                    Frame g1 = f, g2 = f, g3 = f;
                    g1.children.clear();
                    g2.children.clear();
                    g3.children.clear();
                    visit_body(st.bodies[0], g1);
                    for (size_t k = 1; k < st.conds.size(); ++k) {
                        visit_expr(st.conds[k].get(), g2);
                        visit_body(st.bodies[k], g2);
                    }
                    visit_body(st.else_body, g3);
                    Frame* groups[3] = {&g1, &g2, &g3};
                    for (Frame* g : groups) {
                        for (auto& e : g->kinds) {
                            // jinja2 (branch_update): a name first met inside a branch is resolved from the
                            // outside at frame start, even when every branch stores it
                            if (has(f.kinds, e.first)) continue;
                            f.kinds.emplace_back(e.first, 'L');
                        }
                        for (const auto& n : g->stores)
                            if (!has_store(f, n)) f.stores.push_back(n);
                        f.children.insert(f.children.end(), g->children.begin(), g->children.end());
                    }
                    break;
                }
                case SK::For:
                    visit_expr(st.expr.get(), f);
                    f.children.push_back(&st);
                    break;
                case SK::Set:
                    visit_expr(st.expr.get(), f);
                    for (const auto& t : st.targets) {
                        if (t->k == NK::Name) store(f, t->name);
                        else visit_expr(t->kids[0].get(), f);
                    }
                    break;
                case SK::SetBlock:
                    store(f, st.targets[0]->name);
                    f.children.push_back(&st);
                    break;
                case SK::Macro:
                    store(f, st.name);
                    f.children.push_back(&st);
                    break;
                case SK::CallBlock:
                    visit_expr(st.expr.get(), f);
                    f.children.push_back(&st);
                    break;
                case SK::FilterBlock:
                    visit_expr(st.expr.get(), f);
                    f.children.push_back(&st);
                    break;
                case SK::With:
                    for (const auto& c : st.conds) visit_expr(c.get(), f);
                    f.children.push_back(&st);
                    break;
                case SK::Block:
                    if (st.name == "generation") f.children.push_back(&st);  // a caller() frame
                    else visit_body(st.body, f);
                    break;
            }
        }
    }

    void analyze_frame(Body& body, const std::vector<std::string>& params, const std::vector<const Node*>& pre,
                       std::vector<const Kinds*>& ancestors, std::vector<std::string>& undef_out) {
        Frame f;
        for (const auto& p : params) f.kinds.emplace_back(p, 'P');
        for (const Node* e : pre) visit_expr(e, f);  // loop filter / macro defaults: evaluated in this frame first
        visit_body(body, f);
        undef_out.clear();
        for (const auto& e : f.kinds) {
            if (e.second != 'S') continue;
            bool known = false;
            for (const Kinds* a : ancestors)
                if (has(*a, e.first)) known = true;
            if (!known) undef_out.push_back(e.first);
        }
        ancestors.push_back(&f.kinds);
        for (Stmt* c : f.children) {
            std::vector<std::string> ps;
            std::vector<const Node*> pre;
            switch (c->k) {
                case SK::For:
                    for (const auto& t : c->targets) ps.push_back(t->name);
                    ps.push_back("loop");
                    pre.push_back(c->cond.get());
                    break;
                case SK::Macro:
                    ps = c->params;
                    ps.push_back("varargs");
                    ps.push_back("kwargs");
                    ps.push_back("caller");
                    break;
                case SK::CallBlock: ps = c->params; break;
                case SK::With:
                    for (const auto& t : c->targets) ps.push_back(t->name);
                    break;
                default: break;
            }
            if (c->k == SK::Macro || c->k == SK::CallBlock)
                for (const auto& d : c->defaults) pre.push_back(d.get());
            analyze_frame(c->body, ps, pre, ancestors, c->undef_names);
            if (c->k == SK::For && !c->else_body.empty()) {
                std::vector<std::string> dummy;
                std::vector<std::string> else_undef;
                analyze_frame(c->else_body, {"loop"}, {}, ancestors, else_undef);
                (void)dummy;
            }
        }
        ancestors.pop_back();
    }
};

}  // namespace

void analyse_symbols(Program& prog) { SymbolAnalysis().run(prog); }

}  // namespace jinja
}  // namespace ovgc
