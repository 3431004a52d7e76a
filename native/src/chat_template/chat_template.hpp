// A Jinja2 chat-template renderer with Hugging Face transformers' semantics
// (ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True), tojson, raise_exception,
// strftime_now). Plain C++17, no dependencies beyond json/json.hpp.
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
