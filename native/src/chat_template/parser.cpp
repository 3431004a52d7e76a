// Parser for the Jinja2 subset used by chat templates: tokens (lexer.hpp) to the AST (ast.hpp), then symbol
// analysis (symbols.hpp).
#include <algorithm>
#include <cctype>
#include <cstring>

#include "chat_template/ast.hpp"
#include "chat_template/lexer.hpp"
#include "chat_template/symbols.hpp"

namespace ovgc {
namespace jinja {

namespace {

constexpr int kMaxParseDepth = 100;

// ---------------------------------------------------------------- parser

class Parser {
public:
    Parser(const std::string& src, std::vector<Token> toks) : src_(src), t_(std::move(toks)) {}

    std::unique_ptr<Program> parse() {
        auto prog = std::make_unique<Program>();
        std::string which;
        prog->body = parse_body({}, which);
        return prog;
    }

private:
    const std::string& src_;
    std::vector<Token> t_;
    size_t i_ = 0;
    int depth_ = 0;
    int chain_ = 0;       // operands in currently open left-associative chains (a + b + c, x.a.b, x|f|g)
    int loop_depth_ = 0;  // enclosing for-loops in the current function body (macros/call blocks reset it)

    struct ChainGuard {
        Parser& p;
        int n = 0;
        explicit ChainGuard(Parser& pp) : p(pp) {}
        void add() {
            ++n;
            if (++p.chain_ > 1000) p.fail("expression nesting too deep");
        }
        ~ChainGuard() { p.chain_ -= n; }
    };

    struct DepthGuard {
        Parser& p;
        explicit DepthGuard(Parser& pp) : p(pp) {
            if (++p.depth_ > kMaxParseDepth) p.fail("template nesting too deep");
        }
        ~DepthGuard() { --p.depth_; }
    };

    const Token& cur() const { return t_[i_]; }
    const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
    void next() {
        if (i_ + 1 < t_.size()) ++i_;
    }

    [[noreturn]] void fail_at(size_t off, const std::string& msg) const { syntax_error(src_, off, msg); }
    [[noreturn]] void fail(const std::string& msg) const { fail_at(cur().off, msg); }

    static std::string describe(const Token& t) {
        switch (t.t) {
            case Tk::Data: return "template data";
            case Tk::VarBegin: return "'{{'";
            case Tk::VarEnd: return "end of print statement";
            case Tk::BlockBegin: return "'{%'";
            case Tk::BlockEnd: return "end of statement block";
            case Tk::Name: return "'" + t.v + "'";
            case Tk::Str: return "string";
            case Tk::Int: return "integer";
            case Tk::Float: return "float";
            case Tk::Op: return "'" + t.v + "'";
            case Tk::End: return "end of template";
        }
        return "?";
    }

    bool is_op(const char* o) const { return cur().t == Tk::Op && cur().v == o; }
    bool is_name(const char* nm) const { return cur().t == Tk::Name && cur().v == nm; }
    bool skip_op(const char* o) {
        if (is_op(o)) {
            next();
            return true;
        }
        return false;
    }
    bool skip_name(const char* nm) {
        if (is_name(nm)) {
            next();
            return true;
        }
        return false;
    }
    void expect_op(const char* o) {
        if (!skip_op(o)) fail(std::string("expected '") + o + "', got " + describe(cur()));
    }
    std::string expect_name() {
        if (cur().t != Tk::Name) fail("expected name, got " + describe(cur()));
        std::string v = cur().v;
        next();
        return v;
    }
    void expect_block_end() {
        if (cur().t != Tk::BlockEnd) fail("expected end of statement block, got " + describe(cur()));
        next();
    }

    NodeP mk(NK k, const Token& at) {
        auto nd = std::make_unique<Node>();
        nd->k = k;
        int l, c;
        linecol(src_, at.off, l, c);
        nd->line = l;
        nd->col = c;
        return nd;
    }
    NodeP mk(NK k) { return mk(k, cur()); }

    StmtP mks(SK k, const Token& at) {
        auto s = std::make_unique<Stmt>();
        s->k = k;
        int l, c;
        linecol(src_, at.off, l, c);
        s->line = l;
        s->col = c;
        return s;
    }

    // ---- statements

    Body parse_body(const std::vector<const char*>& ends, std::string& which) {
        DepthGuard g(*this);
        Body body;
        for (;;) {
            const Token& t = cur();
            if (t.t == Tk::End) {
                if (!ends.empty()) {
                    std::string want;
                    for (size_t k = 0; k < ends.size(); ++k) want += (k ? " or '" : "'") + std::string(ends[k]) + "'";
                    fail("unexpected end of template; looking for the following tags: " + want);
                }
                return body;
            }
            if (t.t == Tk::Data) {
                auto s = mks(SK::Text, t);
                s->text = t.v;
                body.push_back(std::move(s));
                next();
                continue;
            }
            if (t.t == Tk::VarBegin) {
                auto s = mks(SK::Out, t);
                next();
                s->expr = parse_tuple(true, false);
                if (cur().t != Tk::VarEnd) fail("expected end of print statement, got " + describe(cur()));
                next();
                body.push_back(std::move(s));
                continue;
            }
            if (t.t == Tk::BlockBegin) {
                const Token& nm = peek();
                if (nm.t != Tk::Name) fail_at(nm.off, "expected statement name, got " + describe(nm));
                for (const char* e : ends) {
                    if (nm.v == e) {
                        next();
                        next();
                        which = e;
                        return body;
                    }
                }
                next();
                body.push_back(parse_statement());
                continue;
            }
            fail("unexpected " + describe(t));
        }
    }

    StmtP parse_statement() {
        const Token at = cur();
        std::string kw = cur().v;
        next();
        std::string which;
        if (kw == "if") {
            auto s = mks(SK::If, at);
            s->conds.push_back(parse_tuple(true, false));
            expect_block_end();
            for (;;) {
                s->bodies.push_back(parse_body({"elif", "else", "endif"}, which));
                if (which == "elif") {
                    s->conds.push_back(parse_tuple(true, false));
                    expect_block_end();
                    continue;
                }
                if (which == "else") {
                    expect_block_end();
                    s->else_body = parse_body({"endif"}, which);
                }
                expect_block_end();
                break;
            }
            return s;
        }
        if (kw == "for") {
            auto s = mks(SK::For, at);
            parse_assign_targets(s->targets, false);
            if (!skip_name("in")) fail("expected 'in', got " + describe(cur()));
            s->expr = parse_tuple(false, false, true);
            if (skip_name("if")) s->cond = parse_expression(true);
            if (skip_name("recursive")) s->recursive = true;
            expect_block_end();
            ++loop_depth_;
            s->body = parse_body({"endfor", "else"}, which);
            --loop_depth_;
            if (which == "else") {
                expect_block_end();
                s->else_body = parse_body({"endfor"}, which);
            }
            expect_block_end();
            return s;
        }
        if (kw == "set") {
            std::vector<NodeP> targets;
            parse_assign_targets(targets, true);
            if (skip_op("=")) {
                auto s = mks(SK::Set, at);
                s->targets = std::move(targets);
                s->expr = parse_tuple(true, false);
                expect_block_end();
                return s;
            }
            auto s = mks(SK::SetBlock, at);
            if (targets.size() != 1 || targets[0]->k != NK::Name) fail("block set needs a single name");
            s->targets = std::move(targets);
            if (is_op("|")) s->expr = parse_filter(nullptr, false);
            expect_block_end();
            s->body = parse_body({"endset"}, which);
            expect_block_end();
            return s;
        }
        if (kw == "macro") {
            auto s = mks(SK::Macro, at);
            s->name = expect_name();
            parse_signature(*s);
            expect_block_end();
            int saved = loop_depth_;
            loop_depth_ = 0;
            s->body = parse_body({"endmacro"}, which);
            loop_depth_ = saved;
            if (cur().t == Tk::Name) next();
            expect_block_end();
            s->uses_varargs = body_uses(s->body, "varargs");
            s->uses_kwargs = body_uses(s->body, "kwargs");
            return s;
        }
        if (kw == "call") {
            auto s = mks(SK::CallBlock, at);
            if (is_op("(")) parse_signature(*s);
            s->expr = parse_expression(true);
            if (s->expr->k != NK::Call) fail("expected call");
            expect_block_end();
            int saved = loop_depth_;
            loop_depth_ = 0;
            s->body = parse_body({"endcall"}, which);
            loop_depth_ = saved;
            expect_block_end();
            return s;
        }
        if (kw == "filter") {
            auto s = mks(SK::FilterBlock, at);
            s->expr = parse_filter(nullptr, true);
            expect_block_end();
            s->body = parse_body({"endfilter"}, which);
            expect_block_end();
            return s;
        }
        if (kw == "break" || kw == "continue") {
            if (loop_depth_ == 0) fail_at(at.off, "'" + kw + "' outside of a loop");
            auto s = mks(kw == "break" ? SK::Break : SK::Continue, at);
            expect_block_end();
            return s;
        }
        if (kw == "block") {  // rendered in place (no inheritance in a single chat template)
            auto s = mks(SK::Block, at);
            expect_name();
            if (is_name("scoped") || is_name("required")) next();
            expect_block_end();
            s->body = parse_body({"endblock"}, which);
            if (cur().t == Tk::Name) next();
            expect_block_end();
            return s;
        }
        if (kw == "generation") {  // transformers' AssistantTracker: a call block rendering its body
            auto s = mks(SK::Block, at);
            s->name = "generation";
            expect_block_end();
            int saved = loop_depth_;
            loop_depth_ = 0;
            s->body = parse_body({"endgeneration"}, which);
            loop_depth_ = saved;
            expect_block_end();
            return s;
        }
        if (kw == "with") {
            auto s = mks(SK::With, at);
            while (cur().t != Tk::BlockEnd) {
                if (!s->targets.empty()) expect_op(",");
                std::vector<NodeP> tg;
                parse_assign_targets(tg, false);
                if (tg.size() != 1) fail("with: single names only");
                expect_op("=");
                s->targets.push_back(std::move(tg[0]));
                s->conds.push_back(parse_expression(true));
            }
            expect_block_end();
            s->body = parse_body({"endwith"}, which);
            expect_block_end();
            return s;
        }
        fail_at(at.off, "encountered unknown tag '" + kw + "'");
    }

    static bool node_uses(const Node* n, const char* name) {
        if (!n) return false;
        if (n->k == NK::Name && n->name == name) return true;
        for (const auto& k : n->kids)
            if (node_uses(k.get(), name)) return true;
        for (const auto& kv : n->kwargs)
            if (node_uses(kv.second.get(), name)) return true;
        return false;
    }

    static bool body_uses(const Body& body, const char* name) {
        for (const auto& st : body) {
            if (node_uses(st->expr.get(), name) || node_uses(st->cond.get(), name)) return true;
            for (const auto& c : st->conds)
                if (node_uses(c.get(), name)) return true;
            for (const auto& b : st->bodies)
                if (body_uses(b, name)) return true;
            for (const auto& d : st->defaults)
                if (node_uses(d.get(), name)) return true;
            if (st->k != SK::Macro && body_uses(st->body, name)) return true;
            if (body_uses(st->else_body, name)) return true;
        }
        return false;
    }

    void parse_signature(Stmt& s) {
        expect_op("(");
        while (!is_op(")")) {
            if (!s.params.empty()) expect_op(",");
            if (is_op(")")) break;
            s.params.push_back(expect_name());
            if (skip_op("=")) s.defaults.push_back(parse_expression(true));
            else s.defaults.push_back(nullptr);
        }
        expect_op(")");
    }

    void parse_assign_targets(std::vector<NodeP>& out, bool with_namespace) {
        bool paren = skip_op("(");
        for (;;) {
            auto nd = mk(NK::Name);
            nd->name = expect_name();
            if (with_namespace && is_op(".")) {
                next();
                auto ga = mk(NK::GetAttr);
                ga->name = expect_name();
                ga->kids.push_back(std::move(nd));
                nd = std::move(ga);
            }
            out.push_back(std::move(nd));
            if (!skip_op(",")) break;
            if (paren && is_op(")")) break;
        }
        if (paren) expect_op(")");
    }

    // ---- expressions

    bool tuple_end(bool for_iter) const {
        const Token& t = cur();
        if (t.t == Tk::VarEnd || t.t == Tk::BlockEnd || t.t == Tk::End) return true;
        if (t.t == Tk::Op && t.v == ")") return true;
        if (for_iter && t.t == Tk::Name && (t.v == "if" || t.v == "recursive")) return true;
        return false;
    }

    NodeP parse_tuple(bool with_condexpr, bool explicit_parens, bool for_iter = false) {
        const Token at = cur();
        std::vector<NodeP> args;
        bool is_tuple = false;
        for (;;) {
            if (!args.empty()) expect_op(",");
            if (tuple_end(for_iter)) break;
            args.push_back(parse_expression(with_condexpr));
            if (is_op(",")) is_tuple = true;
            else break;
        }
        if (!is_tuple) {
            if (!args.empty()) return std::move(args[0]);
            if (!explicit_parens) fail("expected an expression, got " + describe(cur()));
        }
        auto nd = mk(NK::Tuple, at);
        nd->kids = std::move(args);
        return nd;
    }

    NodeP parse_expression(bool with_condexpr) {
        DepthGuard g(*this);
        return with_condexpr ? parse_condexpr() : parse_or();
    }

    NodeP parse_condexpr() {
        NodeP e1 = parse_or();
        while (is_name("if")) {
            const Token at = cur();
            next();
            NodeP e2 = parse_or();
            NodeP e3;
            if (skip_name("else")) e3 = parse_condexpr();
            auto nd = mk(NK::Cond, at);
            nd->kids.push_back(std::move(e2));
            nd->kids.push_back(std::move(e1));
            nd->kids.push_back(std::move(e3));
            e1 = std::move(nd);
        }
        return e1;
    }

    NodeP parse_or() {
        ChainGuard cg(*this);
        NodeP l = parse_and();
        while (is_name("or")) {
            cg.add();
            auto nd = mk(NK::Or);
            next();
            nd->kids.push_back(std::move(l));
            nd->kids.push_back(parse_and());
            l = std::move(nd);
        }
        return l;
    }

    NodeP parse_and() {
        ChainGuard cg(*this);
        NodeP l = parse_not();
        while (is_name("and")) {
            cg.add();
            auto nd = mk(NK::And);
            next();
            nd->kids.push_back(std::move(l));
            nd->kids.push_back(parse_not());
            l = std::move(nd);
        }
        return l;
    }

    NodeP parse_not() {
        if (is_name("not")) {
            DepthGuard g(*this);
            auto nd = mk(NK::Not);
            next();
            nd->kids.push_back(parse_not());
            return nd;
        }
        return parse_compare();
    }

    NodeP parse_compare() {
        const Token at = cur();
        NodeP e = parse_math1();
        NodeP cmp;
        for (;;) {
            std::string op;
            if (cur().t == Tk::Op &&
                (cur().v == "==" || cur().v == "!=" || cur().v == "<" || cur().v == "<=" || cur().v == ">" ||
                 cur().v == ">=")) {
                op = cur().v;
                next();
            } else if (is_name("in")) {
                op = "in";
                next();
            } else if (is_name("not") && peek().t == Tk::Name && peek().v == "in") {
                op = "notin";
                next();
                next();
            } else {
                break;
            }
            if (!cmp) {
                cmp = mk(NK::Compare, at);
                cmp->kids.push_back(std::move(e));
            }
            cmp->ops.push_back(op);
            cmp->kids.push_back(parse_math1());
        }
        return cmp ? std::move(cmp) : std::move(e);
    }

    NodeP parse_math1() {
        ChainGuard cg(*this);
        NodeP l = parse_concat();
        while (is_op("+") || is_op("-")) {
            cg.add();
            auto nd = mk(NK::Bin);
            nd->op = cur().v[0];
            next();
            nd->kids.push_back(std::move(l));
            nd->kids.push_back(parse_concat());
            l = std::move(nd);
        }
        return l;
    }

    NodeP parse_concat() {
        const Token at = cur();
        NodeP first = parse_math2();
        if (!is_op("~")) return first;
        auto nd = mk(NK::Concat, at);
        nd->kids.push_back(std::move(first));
        while (skip_op("~")) nd->kids.push_back(parse_math2());
        return nd;
    }

    NodeP parse_math2() {
        ChainGuard cg(*this);
        NodeP l = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            cg.add();
            auto nd = mk(NK::Bin);
            nd->op = cur().v == "//" ? 'F' : cur().v[0];
            next();
            nd->kids.push_back(std::move(l));
            nd->kids.push_back(parse_pow());
            l = std::move(nd);
        }
        return l;
    }

    NodeP parse_pow() {
        ChainGuard cg(*this);
        NodeP l = parse_unary(true);
        while (is_op("**")) {
            cg.add();
            auto nd = mk(NK::Bin);
            nd->op = 'P';
            next();
            nd->kids.push_back(std::move(l));
            nd->kids.push_back(parse_unary(true));
            l = std::move(nd);
        }
        return l;
    }

    NodeP parse_unary(bool with_filter) {
        DepthGuard g(*this);
        NodeP node;
        if (is_op("-") || is_op("+")) {
            node = mk(is_op("-") ? NK::Neg : NK::Pos);
            next();
            node->kids.push_back(parse_unary(false));
        } else {
            node = parse_primary();
        }
        node = parse_postfix(std::move(node));
        if (with_filter) node = parse_filter_expr(std::move(node));
        return node;
    }

    NodeP parse_primary() {
        const Token& t = cur();
        switch (t.t) {
            case Tk::Name: {
                if (t.v == "true" || t.v == "True" || t.v == "false" || t.v == "False") {
                    auto nd = mk(NK::Const);
                    nd->cval = Value::boolean(t.v[0] == 't' || t.v[0] == 'T');
                    next();
                    return nd;
                }
                if (t.v == "none" || t.v == "None") {
                    auto nd = mk(NK::Const);
                    nd->cval = Value::none();
                    next();
                    return nd;
                }
                auto nd = mk(NK::Name);
                nd->name = t.v;
                next();
                return nd;
            }
            case Tk::Str: {
                auto nd = mk(NK::Const);
                std::string s;
                while (cur().t == Tk::Str) {
                    s += cur().v;
                    next();
                }
                nd->cval = Value::str(std::move(s));
                return nd;
            }
            case Tk::Int: {
                auto nd = mk(NK::Const);
                nd->cval = Value::integer(t.iv);
                next();
                return nd;
            }
            case Tk::Float: {
                auto nd = mk(NK::Const);
                nd->cval = Value::flt(t.fv);
                next();
                return nd;
            }
            case Tk::Op:
                if (t.v == "(") {
                    next();
                    NodeP e = parse_tuple(true, true);
                    expect_op(")");
                    return e;
                }
                if (t.v == "[") {
                    auto nd = mk(NK::List);
                    next();
                    while (!is_op("]")) {
                        if (!nd->kids.empty()) expect_op(",");
                        if (is_op("]")) break;
                        nd->kids.push_back(parse_expression(true));
                    }
                    expect_op("]");
                    return nd;
                }
                if (t.v == "{") {
                    auto nd = mk(NK::Dict);
                    next();
                    while (!is_op("}")) {
                        if (!nd->kids.empty()) expect_op(",");
                        if (is_op("}")) break;
                        nd->kids.push_back(parse_expression(true));
                        expect_op(":");
                        nd->kids.push_back(parse_expression(true));
                    }
                    expect_op("}");
                    return nd;
                }
                break;
            default: break;
        }
        fail("unexpected " + describe(t));
    }

    NodeP parse_postfix(NodeP node) {
        ChainGuard cg(*this);
        for (;;) {
            cg.add();
            if (is_op(".") || is_op("[")) node = parse_subscript(std::move(node));
            else if (is_op("(")) node = parse_call(std::move(node));
            else break;
        }
        return node;
    }

    NodeP parse_filter_expr(NodeP node) {
        ChainGuard cg(*this);
        for (;;) {
            cg.add();
            if (is_op("|")) node = parse_filter(std::move(node), false);
            else if (is_name("is")) node = parse_test(std::move(node));
            else if (is_op("(")) node = parse_call(std::move(node));
            else break;
        }
        return node;
    }

    NodeP parse_subscript(NodeP node) {
        const Token at = cur();
        if (skip_op(".")) {
            if (cur().t == Tk::Name) {
                auto nd = mk(NK::GetAttr, at);
                nd->name = cur().v;
                next();
                nd->kids.push_back(std::move(node));
                return nd;
            }
            if (cur().t == Tk::Int) {
                auto nd = mk(NK::GetItem, at);
                auto c = mk(NK::Const);
                c->cval = Value::integer(cur().iv);
                next();
                nd->kids.push_back(std::move(node));
                nd->kids.push_back(std::move(c));
                return nd;
            }
            fail("expected name or number after '.'");
        }
        expect_op("[");
        std::vector<NodeP> args;
        while (!is_op("]")) {
            if (!args.empty()) expect_op(",");
            args.push_back(parse_subscribed());
        }
        expect_op("]");
        if (args.size() == 1 && args[0]->k == NK::Slice) {
            args[0]->kids.insert(args[0]->kids.begin(), std::move(node));
            return std::move(args[0]);
        }
        auto nd = mk(NK::GetItem, at);
        nd->kids.push_back(std::move(node));
        if (args.size() == 1) {
            nd->kids.push_back(std::move(args[0]));
        } else {
            auto tup = mk(NK::Tuple, at);
            tup->kids = std::move(args);
            nd->kids.push_back(std::move(tup));
        }
        return nd;
    }

    NodeP parse_subscribed() {
        const Token at = cur();
        std::vector<NodeP> parts;
        if (is_op(":")) {
            next();
            parts.push_back(nullptr);
        } else {
            NodeP e = parse_expression(true);
            if (!is_op(":")) return e;
            next();
            parts.push_back(std::move(e));
        }
        if (is_op(":")) parts.push_back(nullptr);
        else if (!is_op("]") && !is_op(",")) parts.push_back(parse_expression(true));
        else parts.push_back(nullptr);
        if (skip_op(":")) {
            if (!is_op("]") && !is_op(",")) parts.push_back(parse_expression(true));
            else parts.push_back(nullptr);
        } else {
            parts.push_back(nullptr);
        }
        auto nd = mk(NK::Slice, at);
        nd->kids = std::move(parts);  // start, stop, step; the object is inserted in front later
        return nd;
    }

    void parse_call_args(Node& nd) {
        expect_op("(");
        bool any = false;
        while (!is_op(")")) {
            if (any) {
                expect_op(",");
                if (is_op(")")) break;
            }
            any = true;
            if (is_op("*") || is_op("**")) fail("*args / **kwargs in calls are not supported");
            if (cur().t == Tk::Name && peek().t == Tk::Op && peek().v == "=") {
                std::string key = cur().v;
                next();
                next();
                nd.kwargs.emplace_back(key, parse_expression(true));
            } else {
                if (!nd.kwargs.empty()) fail("positional argument follows keyword argument");
                nd.kids.push_back(parse_expression(true));
            }
        }
        expect_op(")");
    }

    NodeP parse_call(NodeP node) {
        DepthGuard g(*this);
        auto nd = mk(NK::Call);
        nd->kids.push_back(std::move(node));
        parse_call_args(*nd);
        return nd;
    }

    NodeP parse_filter(NodeP node, bool start_inline) {
        DepthGuard g(*this);
        ChainGuard cg(*this);
        while (is_op("|") || start_inline) {
            cg.add();
            if (!start_inline) next();
            start_inline = false;
            auto nd = mk(NK::Filter);
            nd->name = expect_name();
            while (is_op(".")) {
                next();
                nd->name += "." + expect_name();
            }
            nd->kids.push_back(std::move(node));
            if (is_op("(")) parse_call_args(*nd);
            node = std::move(nd);
        }
        return node;
    }

    NodeP parse_test(NodeP node) {
        DepthGuard g(*this);
        auto nd = mk(NK::Test);
        next();  // is
        if (skip_name("not")) nd->negated = true;
        nd->name = expect_name();
        while (is_op(".")) {
            next();
            nd->name += "." + expect_name();
        }
        nd->kids.push_back(std::move(node));
        if (is_op("(")) {
            parse_call_args(*nd);
        } else if ((cur().t == Tk::Name || cur().t == Tk::Str || cur().t == Tk::Int || cur().t == Tk::Float ||
                    is_op("(") || is_op("[") || is_op("{")) &&
                   !(is_name("else") || is_name("or") || is_name("and"))) {
            if (is_name("is")) fail("you cannot chain multiple tests with is");
            NodeP arg = parse_primary();
            arg = parse_postfix(std::move(arg));
            nd->kids.push_back(std::move(arg));
        }
        return nd;
    }
};

}  // namespace

std::unique_ptr<Program> parse_template(const std::string& source) {
    // Normalise newlines like jinja2 and drop a single trailing newline (keep_trailing_newline=False).
    std::string src;
    src.reserve(source.size());
    for (size_t k = 0; k < source.size(); ++k) {
        char c = source[k];
        if (c == '\r') {
            src += '\n';
            if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
        } else {
            src += c;
        }
    }
    if (!src.empty() && src.back() == '\n') src.pop_back();
    struct Reset {
        Reset() { reset_line_index(); }
        ~Reset() { reset_line_index(); }
    } reset;
    Parser p(src, lex(src));
    auto prog = p.parse();
    analyse_symbols(*prog);
    return prog;
}

}  // namespace jinja
}  // namespace ovgc
