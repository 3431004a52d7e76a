// A small JSON value type (json.cpp), a strict RFC 8259 parser over nlohmann-json (json_parse.cpp) and a
// Python-compatible serializer (json.cpp). This header is plain C++17; only json_parse.cpp includes nlohmann.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ovgc {

struct JsonError : std::runtime_error {
    using std::runtime_error::runtime_error;
};  // parse/type errors

class JsonValue {
public:
    enum class Kind { Null, Bool, Int, Float, String, Array, Object };
    using Array = std::vector<JsonValue>;
    using Member = std::pair<std::string, JsonValue>;
    using Object = std::vector<Member>;  // insertion-ordered

    JsonValue();  // null
    JsonValue(std::nullptr_t);
    JsonValue(bool);
    JsonValue(int);
    JsonValue(int64_t);
    JsonValue(uint64_t);  // values above INT64_MAX become Float
    JsonValue(double);
    JsonValue(const char*);
    JsonValue(std::string);
    JsonValue(std::string_view);

    static JsonValue array(Array items = {});
    static JsonValue object(Object members = {});

    Kind kind() const;
    bool is_null() const;
    bool is_bool() const;
    bool is_int() const;
    bool is_float() const;
    bool is_number() const;  // Int or Float (not Bool)
    bool is_string() const;
    bool is_array() const;
    bool is_object() const;

    // as_* throw JsonError on the wrong kind. as_number accepts Int and Float.
    bool as_bool() const;
    int64_t as_int() const;
    double as_number() const;
    const std::string& as_string() const;
    const Array& as_array() const;
    Array& as_array();
    const Object& as_object() const;
    Object& as_object();

    size_t size() const;          // array/object element count, string length; 0 otherwise
    void push_back(JsonValue v);  // array only
    const JsonValue* find(std::string_view key) const;  // object; nullptr if absent
    JsonValue* find(std::string_view key);
    JsonValue& operator[](std::string_view key);  // object: get or insert null (at the end)
    void set(std::string_view key, JsonValue v);  // object: replace in place or append
    bool erase(std::string_view key);

    // Int and Float compare by numeric value (1 == 1.0), like Python.
    bool operator==(const JsonValue&) const;
    bool operator!=(const JsonValue&) const;

    static const char* kind_name(Kind k);

private:
    std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> v_;
};

// Strict RFC 8259 (+ accepts a leading UTF-8 BOM). Throws JsonError naming the byte offset.
// Rejects invalid UTF-8 and lone surrogate escapes; nesting depth limit 512.
JsonValue json_parse(std::string_view text);

struct JsonDumpOptions {
    int indent = -1;  // -1: no newlines (Python indent=None); >= 0: pretty (like Python's indent=N)
    std::string item_sep = ",";
    std::string key_sep = ":";
    bool sort_keys = false;
    bool ensure_ascii = false;
};

// Compact by default. Floats like Python's repr (shortest round trip), NaN/Infinity/-Infinity like Python.
std::string json_dump(const JsonValue& v, const JsonDumpOptions& opt = {});

// Helpers shared with the chat-template renderer.
std::string json_format_double(double d);  // Python repr(float): 0.1, 1e-07, 1.0, inf, nan
void json_escape_string(std::string& out, std::string_view s, bool ensure_ascii);  // with quotes

}  // namespace ovgc
