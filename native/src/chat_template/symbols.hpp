// Symbol analysis after parsing (the subset of jinja2's idtracking that decides which names of a frame read
// as undefined until assigned), filling Stmt::undef_names and Program::undef_names.
#pragma once

#include "chat_template/ast.hpp"

namespace ovgc {
namespace jinja {

void analyse_symbols(Program& prog);

}  // namespace jinja
}  // namespace ovgc
