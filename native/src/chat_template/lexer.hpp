// Lexer for the Jinja2 subset used by chat templates: template data, {{ }} / {% %} / {# #} with -/+
// whitespace control (trim_blocks, lstrip_blocks), raw blocks, names, numbers, strings, operators.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ovgc {
namespace jinja {

enum class Tk { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, Str, Int, Float, Op, End };

struct Token {
    Tk t;
    std::string v;
    int64_t iv = 0;
    double fv = 0;
    size_t off = 0;
};

// Tokens of a (newline-normalised) template source, ending with Tk::End; throws ChatTemplateError naming line:col.
std::vector<Token> lex(const std::string& src);

// Line and column (1-based) of byte `off` in `src`; the line index of the last source is cached per thread.
void linecol(const std::string& src, size_t off, int& line, int& col);
// Drops the cached line index (parse_template calls it before and after each template).
void reset_line_index();

// Throws ChatTemplateError "chat template syntax error at L:C: msg".
[[noreturn]] void syntax_error(const std::string& src, size_t off, const std::string& msg);

}  // namespace jinja
}  // namespace ovgc
