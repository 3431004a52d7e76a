// Temporary stand-in used by CMake only while src/chat_template/*.cpp does not exist.
#include "chat_template/chat_template.hpp"

namespace ovgc {
namespace jinja {
struct Program {};
}  // namespace jinja
ChatTemplate::ChatTemplate(const std::string&) {}
std::string ChatTemplate::render(const JsonValue&) const {
    throw ChatTemplateError("chat template renderer not built (stub)");
}
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;
}  // namespace ovgc
