// The parsed template: expression nodes, statements, the program; produced by parse_template (parser.cpp).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat_template/value.hpp"

namespace ovgc {
namespace jinja {

struct Node;
struct Stmt;
using NodeP = std::unique_ptr<Node>;
using StmtP = std::unique_ptr<Stmt>;
using Body = std::vector<StmtP>;

enum class NK { Const, Name, List, Tuple, Dict, GetAttr, GetItem, Slice, Call, Filter, Test, Bin, Neg, Pos,
                Compare, And, Or, Not, Cond, Concat };

struct Node {
    NK k;
    int line = 0, col = 0;
    Value cval;
    std::string name;
    char op = 0;
    bool negated = false;
    std::vector<NodeP> kids;  // may contain nullptrs (slice parts, filter-block subject, missing else)
    std::vector<std::string> ops;
    std::vector<std::pair<std::string, NodeP>> kwargs;
};

enum class SK { Text, Out, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, Break, Continue, With, Block };

struct Stmt {
    SK k;
    int line = 0, col = 0;
    std::string text;
    NodeP expr;
    std::vector<NodeP> conds;
    std::vector<Body> bodies;
    Body body;
    Body else_body;
    std::vector<NodeP> targets;
    NodeP cond;
    std::string name;
    std::vector<std::string> params;
    std::vector<NodeP> defaults;
    bool recursive = false;     // For: `recursive` loop
    bool uses_varargs = false;  // Macro: body references varargs / kwargs
    bool uses_kwargs = false;
    // Names of the frame opened by this statement's body (for/macro/call/with/set-block/filter-block) that jinja2
    // initialises as undefined: first met as an unconditional store, unknown to every enclosing frame. Until the
    // store runs, reading them yields undefined (not the context value).
    std::vector<std::string> undef_names;
};

struct Program {
    Body body;
    std::vector<std::string> undef_names;  // same, for the top-level frame
};

// Lexes, parses and analyses a template (parser.cpp); throws ChatTemplateError naming line:col.
std::unique_ptr<Program> parse_template(const std::string& source);

}  // namespace jinja
}  // namespace ovgc
