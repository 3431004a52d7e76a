// Lexer (see lexer.hpp). Whitespace handling follows jinja2 with trim_blocks=True, lstrip_blocks=True.
#include "chat_template/lexer.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "chat_template/chat_template.hpp"
#include "common/utf8.hpp"

namespace ovgc {
namespace jinja {

namespace {

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

}  // namespace

// Line starts of the source being parsed (one template is parsed at a time per thread).
namespace {
thread_local const std::string* tl_src = nullptr;
thread_local std::vector<size_t> tl_line_starts;
}  // namespace

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

void reset_line_index() {
    tl_src = nullptr;
    tl_line_starts.clear();
}

void syntax_error(const std::string& src, size_t off, const std::string& msg) {
    int l, c;
    linecol(src, off, l, c);
    throw ChatTemplateError("chat template syntax error at " + std::to_string(l) + ":" + std::to_string(c) + ": " +
                            msg);
}

void Lexer::fail(size_t off, const std::string& msg) const { syntax_error(src, off, msg); }

std::vector<Token> lex(const std::string& src) {
    Lexer lx(src);
    lx.run();
    return std::move(lx.toks);
}

}  // namespace jinja
}  // namespace ovgc
