// A Jinja2 chat-template renderer with Hugging Face transformers' semantics
// (ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True), loopcontrols, the {% generation %} tag,
// tojson = json.dumps(ensure_ascii=False, ...), raise_exception, strftime_now). Plain C++17, no dependencies beyond
// json/json.hpp. Files: lexer.*, parser.cpp (tokens to ast.hpp), symbols.* (jinja2-style frame analysis),
// value.* (the value model and its operations), string_methods.* (Python str semantics), interp.* (render state,
// names, calls, expressions), statements.cpp, filters.cpp (builtin filters by table), builtin_tests.cpp,
// limits.hpp (render limits and errors).
//
// Supported: {{ }} / {% %} / {# #} with -/+ whitespace control, raw, if/elif/else, for (else, filter, unpacking,
// recursive, break/continue, loop.* incl. cycle/changed/previtem/nextitem), set (incl. tuples, block set with
// filter, namespace attributes), macro (defaults, keyword args, varargs/kwargs, caller/call blocks), filter
// blocks, with, block (rendered in place); Python-like values (int/float arithmetic, str/list/tuple/dict, Markup
// from |safe/|escape, lazy filter results behave like generators), Python str methods, dict/list methods, jinja2
// builtin filters and tests, undefined semantics of jinja2.Undefined, globals range/dict/namespace.
// Not supported: include/import/extends, cycler/joiner/lipsum, Python big integers (overflow falls back to float),
// full Unicode case mapping (Latin-1/Latin Extended-A/Greek/Cyrillic only).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "json/json.hpp"

namespace ovgc {

struct ChatTemplateError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

namespace jinja {
struct Program;
}

class ChatTemplate {
public:
    // Parses once; throws ChatTemplateError naming line:col on syntax errors.
    explicit ChatTemplate(const std::string& source);

    // context: object with messages, add_generation_prompt, bos_token, eos_token, tools (optional),
    // plus any extra-context keys (e.g. enable_thinking). Like transformers, `tools` and `documents` are defined
    // as none when absent. Throws ChatTemplateError (raise_exception(msg) → exactly msg; undefined-attribute
    // misuse, unknown filters, recursion/step/output limits, ...).
    // Thread-safe: render() does not modify the parsed template; concurrent renders are fine.
    // Limits: macro call depth 100, 5M execution steps, 256 MiB output, range() up to 100000 items.
    std::string render(const JsonValue& context) const;

    ChatTemplate(ChatTemplate&&) noexcept;
    ChatTemplate& operator=(ChatTemplate&&) noexcept;
    ~ChatTemplate();

private:
    std::unique_ptr<jinja::Program> prog_;
};

}  // namespace ovgc
