// Lexer + parser for the Jinja2 subset used by chat templates.
// Whitespace handling follows jinja2 with trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False.
#include <algorithm>
#include <cctype>
#include <cstring>

#include "chat_template/ast.hpp"
#include "common/utf8.hpp"

namespace ovgc {
namespace jinja {

namespace {

constexpr int kMaxParseDepth = 100;

enum class Tk { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, Str, Int, Float, Op, End };

struct Token {
    Tk t;
    std::string v;
    int64_t iv = 0;
    double fv = 0;
    size_t off = 0;
};

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

class Lexer {
public:
    explicit Lexer(const std::string& s) : src(s), n(s.size()) {}

    const std::string& src;
    size_t n;
    std::vector<Token> toks;

    [[noreturn]] void fail(size_t off, const std::string& msg) const;

    void emit_data(std::string text, size_t off) {
        if (text.empty()) return;
        toks.push_back(Token{Tk::Data, std::move(text), 0, 0, off});
    }

    bool starts(size_t p, const char* w) const {
        size_t m = std::strlen(w);
        return p + m <= n && src.compare(p, m, w) == 0;
    }

    // Whitespace control applied to the data preceding a tag.
    void strip_text(std::string& text, char sign, bool lstrip_allowed, bool line_starting) const {
        if (sign == '-') {
            size_t e = text.size();
            while (e > 0 && is_ws(text[e - 1])) --e;
            text.resize(e);
        } else if (sign != '+' && lstrip_allowed) {
            size_t nl = text.rfind('\n');
            size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
            if (l_pos > 0 || line_starting) {
                bool all_ws = l_pos < text.size();
                for (size_t k = l_pos; k < text.size(); ++k)
                    if (!is_ws(text[k])) {
                        all_ws = false;
                        break;
                    }
                if (all_ws) text.resize(l_pos);
            }
        }
    }

    // Matches `{%[-+]?\s*NAME\s*` at p; returns the position after it or npos.
    size_t match_tag_name(size_t p, const char* name, char* sign_out) const {
        if (!starts(p, "{%")) return std::string::npos;
        p += 2;
        char sign = 0;
        if (p < n && (src[p] == '-' || src[p] == '+')) sign = src[p++];
        while (p < n && is_ws(src[p])) ++p;
        size_t m = std::strlen(name);
        if (!starts(p, name)) return std::string::npos;
        p += m;
        if (p < n && (std::isalnum(static_cast<unsigned char>(src[p])) || src[p] == '_')) return std::string::npos;
        while (p < n && is_ws(src[p])) ++p;
        if (sign_out) *sign_out = sign;
        return p;
    }

    void run() {
        size_t pos = 0;
        bool line_starting = true;
        while (pos < n) {
            size_t start = pos;
            for (;;) {
                start = src.find('{', start);
                if (start == std::string::npos || start + 1 >= n) {
                    start = std::string::npos;
                    break;
                }
                char c = src[start + 1];
                if (c == '{' || c == '%' || c == '#') break;
                ++start;
            }
            if (start == std::string::npos) {
                emit_data(src.substr(pos), pos);
                break;
            }
            char kind = src[start + 1];
            char sign = 0;
            if (start + 2 < n && (src[start + 2] == '-' || src[start + 2] == '+')) sign = src[start + 2];
            std::string text = src.substr(pos, start - pos);

            // {% raw %}
            if (kind == '%') {
                size_t p = match_tag_name(start, "raw", nullptr);
                if (p != std::string::npos) {
                    bool strip_after = false;
                    if (starts(p, "-%}")) {
                        strip_after = true;
                        p += 3;
                    } else if (starts(p, "%}")) {
                        p += 2;
                    } else {
                        p = std::string::npos;
                    }
                    if (p != std::string::npos) {
                        strip_text(text, sign, true, line_starting);
                        emit_data(std::move(text), pos);
                        if (strip_after)
                            while (p < n && is_ws(src[p])) ++p;
                        bool ls = p > 0 && src[p - 1] == '\n';
                        // find endraw
                        size_t q = p;
                        for (;;) {
                            q = src.find("{%", q);
                            if (q == std::string::npos) fail(start, "Missing end of raw directive");
                            char esign = 0;
                            size_t e = match_tag_name(q, "endraw", &esign);
                            if (e != std::string::npos) {
                                size_t after;
                                bool strip2 = false, trim = false;
                                if (starts(e, "+%}")) after = e + 3;
                                else if (starts(e, "-%}")) after = e + 3, strip2 = true;
                                else if (starts(e, "%}")) after = e + 2, trim = true;
                                else {
                                    ++q;
                                    continue;
                                }
                                std::string body = src.substr(p, q - p);
                                strip_text(body, esign, true, ls);
                                emit_data(std::move(body), p);
                                if (strip2)
                                    while (after < n && is_ws(src[after])) ++after;
                                else if (trim && after < n && src[after] == '\n')
                                    ++after;
                                line_starting = after > 0 && src[after - 1] == '\n';
                                pos = after;
                                break;
                            }
                            ++q;
                        }
                        continue;
                    }
                }
            }

            strip_text(text, sign, kind != '{', line_starting);
            emit_data(std::move(text), pos);

            size_t p = start + 2 + (sign ? 1 : 0);
            if (kind == '#') {
                size_t q = src.find("#}", p);
                if (q == std::string::npos) fail(start, "Missing end of comment tag");
                // the earliest of "+#}", "-#}", "#}" (the sign, if any, directly precedes "#}")
                size_t after = q + 2;
                char esign = (q > p && (src[q - 1] == '-' || src[q - 1] == '+')) ? src[q - 1] : 0;
                if (esign == '-') {
                    while (after < n && is_ws(src[after])) ++after;
                } else if (esign != '+') {
                    if (after < n && src[after] == '\n') ++after;
                }
                line_starting = src[after - 1] == '\n';
                pos = after;
                continue;
            }
            toks.push_back(Token{kind == '{' ? Tk::VarBegin : Tk::BlockBegin, "", 0, 0, start});
            pos = lex_tag(p, kind, start);
            line_starting = src[pos - 1] == '\n';
        }
        toks.push_back(Token{Tk::End, "", 0, 0, n});
    }

    size_t lex_tag(size_t p, char kind, size_t tag_start) {
        std::string brackets;  // open brackets, innermost last
        int depth = 0;
        for (;;) {
            while (p < n && is_ws(src[p])) ++p;
            if (p >= n) fail(tag_start, kind == '{' ? "unexpected end of template, expected end of print statement ('}}')"
                                                     : "unexpected end of template, expected end of statement block ('%}')");
            if (depth == 0) {
                if (kind == '{') {
                    if (starts(p, "-}}")) {
                        toks.push_back(Token{Tk::VarEnd, "", 0, 0, p});
                        p += 3;
                        while (p < n && is_ws(src[p])) ++p;
                        return p;
                    }
                    if (starts(p, "}}")) {
                        toks.push_back(Token{Tk::VarEnd, "", 0, 0, p});
                        return p + 2;
                    }
                } else {
                    if (starts(p, "-%}")) {
                        toks.push_back(Token{Tk::BlockEnd, "", 0, 0, p});
                        p += 3;
                        while (p < n && is_ws(src[p])) ++p;
                        return p;
                    }
                    if (starts(p, "+%}")) {
                        toks.push_back(Token{Tk::BlockEnd, "", 0, 0, p});
                        return p + 3;
                    }
                    if (starts(p, "%}")) {
                        toks.push_back(Token{Tk::BlockEnd, "", 0, 0, p});
                        p += 2;
                        if (p < n && src[p] == '\n') ++p;
                        return p;
                    }
                }
            }
            unsigned char c = static_cast<unsigned char>(src[p]);
            if (std::isalpha(c) || c == '_' || c >= 0x80) {
                size_t s = p;
                while (p < n && (std::isalnum(static_cast<unsigned char>(src[p])) || src[p] == '_' ||
                                 static_cast<unsigned char>(src[p]) >= 0x80))
                    ++p;
                toks.push_back(Token{Tk::Name, src.substr(s, p - s), 0, 0, s});
                continue;
            }
            if (std::isdigit(c)) {
                p = lex_number(p);
                continue;
            }
            if (c == '\'' || c == '"') {
                p = lex_string(p);
                continue;
            }
            static const char* ops3[] = {"//", "**", "==", "!=", "<=", ">=", nullptr};
            bool matched = false;
            for (int k = 0; ops3[k]; ++k) {
                if (starts(p, ops3[k])) {
                    toks.push_back(Token{Tk::Op, ops3[k], 0, 0, p});
                    p += 2;
                    matched = true;
                    break;
                }
            }
            if (matched) continue;
            if (std::strchr("+-*/%~<>=()[]{},.:|;", c)) {
                if (c == '(' || c == '[' || c == '{') {
                    if (brackets.size() >= 1000) fail(p, "brackets nesting too deep");
                    brackets += static_cast<char>(c);
                    ++depth;
                }
                if (c == ')' || c == ']' || c == '}') {
                    char want = brackets.empty() ? 0 : brackets.back() == '(' ? ')' : brackets.back() == '[' ? ']' : '}';
                    if (c != want)
                        fail(p, std::string("unexpected '") + static_cast<char>(c) + "'" +
                                    (want ? std::string(", expected '") + want + "'" : std::string()));
                    brackets.pop_back();
                    --depth;
                }
                toks.push_back(Token{Tk::Op, std::string(1, static_cast<char>(c)), 0, 0, p});
                ++p;
                continue;
            }
            fail(p, std::string("unexpected char '") + static_cast<char>(c) + "'");
        }
    }

    size_t lex_number(size_t p) {
        size_t s = p;
        auto digits = [&](size_t q) {
            while (q < n && (std::isdigit(static_cast<unsigned char>(src[q])) ||
                             (src[q] == '_' && q + 1 < n && std::isdigit(static_cast<unsigned char>(src[q + 1])))))
                ++q;
            return q;
        };
        p = digits(p);
        bool is_float = false;
        bool after_dot = !toks.empty() && toks.back().t == Tk::Op && toks.back().v == ".";
        if (!after_dot && p + 1 < n && src[p] == '.' && std::isdigit(static_cast<unsigned char>(src[p + 1]))) {
            is_float = true;
            p = digits(p + 1);
        }
        if (!after_dot && p < n && (src[p] == 'e' || src[p] == 'E')) {
            size_t q = p + 1;
            if (q < n && (src[q] == '+' || src[q] == '-')) ++q;
            if (q < n && std::isdigit(static_cast<unsigned char>(src[q]))) {
                is_float = true;
                p = digits(q);
            }
        }
        std::string txt;
        for (size_t k = s; k < p; ++k)
            if (src[k] != '_') txt += src[k];
        Token t{is_float ? Tk::Float : Tk::Int, txt, 0, 0, s};
        try {
            if (is_float) t.fv = std::stod(txt);
            else t.iv = std::stoll(txt);
        } catch (...) {
            if (is_float) fail(s, "invalid number");
            t.t = Tk::Float;
            t.fv = std::stod(txt);
        }
        toks.push_back(std::move(t));
        return p;
    }


    size_t lex_string(size_t p) {
        char q = src[p];
        size_t s = p++;
        std::string out;
        for (;;) {
            if (p >= n) fail(s, "unexpected end of string");
            char c = src[p];
            if (c == q) {
                ++p;
                break;
            }
            if (c != '\\') {
                out += c;
                ++p;
                continue;
            }
            if (p + 1 >= n) fail(s, "unexpected end of string");
            char e = src[p + 1];
            p += 2;
            auto hexn = [&](int cnt) -> long {
                uint32_t v = 0;
                for (int k = 0; k < cnt; ++k) {
                    if (p + k >= n || !std::isxdigit(static_cast<unsigned char>(src[p + k]))) return -1;
                    char h = src[p + k];
                    v = v * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
                }
                p += cnt;
                return static_cast<long>(v);
            };
            switch (e) {
                case '\n': break;  // line continuation
                case '\\': out += '\\'; break;
                case '\'': out += '\''; break;
                case '"': out += '"'; break;
                case 'a': out += '\a'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'v': out += '\v'; break;
                case 'x': case 'u': case 'U': {
                    long v = hexn(e == 'x' ? 2 : e == 'u' ? 4 : 8);
                    if (v < 0 || v > 0x10FFFF) fail(s, "invalid escape in string literal");
                    utf8_append(out, static_cast<uint32_t>(v));
                    break;
                }
                default:
                    if (e >= '0' && e <= '7') {
                        uint32_t v = static_cast<uint32_t>(e - '0');
                        for (int k = 0; k < 2 && p < n && src[p] >= '0' && src[p] <= '7'; ++k) v = v * 8 + (src[p++] - '0');
                        utf8_append(out, v);
                    } else {
                        out += '\\';
                        out += e;
                    }
            }
        }
        toks.push_back(Token{Tk::Str, std::move(out), 0, 0, s});
        return p;
    }
};

// Line starts of the source being parsed (one template is parsed at a time per thread).
thread_local const std::string* tl_src = nullptr;
thread_local std::vector<size_t> tl_line_starts;

void linecol(const std::string& src, size_t off, int& line, int& col) {
    if (tl_src != &src) {
        tl_src = &src;
        tl_line_starts.assign(1, 0);
        for (size_t k = 0; k < src.size(); ++k)
            if (src[k] == '\n') tl_line_starts.push_back(k + 1);
    }
    auto it = std::upper_bound(tl_line_starts.begin(), tl_line_starts.end(), off);
    size_t idx = static_cast<size_t>(it - tl_line_starts.begin()) - 1;
    line = static_cast<int>(idx + 1);
    col = static_cast<int>(off - tl_line_starts[idx] + 1);
}

void Lexer::fail(size_t off, const std::string& msg) const {
    int l, c;
    linecol(src, off, l, c);
    throw ChatTemplateError("chat template syntax error at " + std::to_string(l) + ":" + std::to_string(c) + ": " +
                            msg);
}

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

    [[noreturn]] void fail_at(size_t off, const std::string& msg) const {
        int l, c;
        linecol(src_, off, l, c);
        throw ChatTemplateError("chat template syntax error at " + std::to_string(l) + ":" + std::to_string(c) +
                                ": " + msg);
    }
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
        Reset() { tl_src = nullptr; }
        ~Reset() {
            tl_src = nullptr;
            tl_line_starts.clear();
        }
    } reset;
    Lexer lx(src);
    lx.run();
    Parser p(src, std::move(lx.toks));
    auto prog = p.parse();
    SymbolAnalysis().run(*prog);
    return prog;
}

}  // namespace jinja
}  // namespace ovgc
