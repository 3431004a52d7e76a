#include "json/json.hpp"

#include "common/utf8.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace ovgc {

// ---------------------------------------------------------------- value

JsonValue::JsonValue() : v_(nullptr) {}
JsonValue::JsonValue(std::nullptr_t) : v_(nullptr) {}
JsonValue::JsonValue(bool b) : v_(b) {}
JsonValue::JsonValue(int i) : v_(static_cast<int64_t>(i)) {}
JsonValue::JsonValue(int64_t i) : v_(i) {}
JsonValue::JsonValue(uint64_t u) {
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        v_ = static_cast<int64_t>(u);
    else
        v_ = static_cast<double>(u);
}
JsonValue::JsonValue(double d) : v_(d) {}
JsonValue::JsonValue(const char* s) : v_(std::string(s ? s : "")) {}
JsonValue::JsonValue(std::string s) : v_(std::move(s)) {}
JsonValue::JsonValue(std::string_view s) : v_(std::string(s)) {}

JsonValue JsonValue::array(Array items) {
    JsonValue v;
    v.v_ = std::move(items);
    return v;
}
JsonValue JsonValue::object(Object members) {
    JsonValue v;
    v.v_ = std::move(members);
    return v;
}

JsonValue::Kind JsonValue::kind() const {
    switch (v_.index()) {
        case 0: return Kind::Null;
        case 1: return Kind::Bool;
        case 2: return Kind::Int;
        case 3: return Kind::Float;
        case 4: return Kind::String;
        case 5: return Kind::Array;
        default: return Kind::Object;
    }
}

const char* JsonValue::kind_name(Kind k) {
    switch (k) {
        case Kind::Null: return "null";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "string";
        case Kind::Array: return "array";
        case Kind::Object: return "object";
    }
    return "?";
}

bool JsonValue::is_null() const { return v_.index() == 0; }
bool JsonValue::is_bool() const { return v_.index() == 1; }
bool JsonValue::is_int() const { return v_.index() == 2; }
bool JsonValue::is_float() const { return v_.index() == 3; }
bool JsonValue::is_number() const { return v_.index() == 2 || v_.index() == 3; }
bool JsonValue::is_string() const { return v_.index() == 4; }
bool JsonValue::is_array() const { return v_.index() == 5; }
bool JsonValue::is_object() const { return v_.index() == 6; }

static JsonError type_error(const char* want, JsonValue::Kind got) {
    return JsonError(std::string("JSON value is ") + JsonValue::kind_name(got) + ", expected " + want);
}

bool JsonValue::as_bool() const {
    if (!is_bool()) throw type_error("bool", kind());
    return std::get<bool>(v_);
}
int64_t JsonValue::as_int() const {
    if (!is_int()) throw type_error("int", kind());
    return std::get<int64_t>(v_);
}
double JsonValue::as_number() const {
    if (is_int()) return static_cast<double>(std::get<int64_t>(v_));
    if (is_float()) return std::get<double>(v_);
    throw type_error("number", kind());
}
const std::string& JsonValue::as_string() const {
    if (!is_string()) throw type_error("string", kind());
    return std::get<std::string>(v_);
}
const JsonValue::Array& JsonValue::as_array() const {
    if (!is_array()) throw type_error("array", kind());
    return std::get<Array>(v_);
}
JsonValue::Array& JsonValue::as_array() {
    if (!is_array()) throw type_error("array", kind());
    return std::get<Array>(v_);
}
const JsonValue::Object& JsonValue::as_object() const {
    if (!is_object()) throw type_error("object", kind());
    return std::get<Object>(v_);
}
JsonValue::Object& JsonValue::as_object() {
    if (!is_object()) throw type_error("object", kind());
    return std::get<Object>(v_);
}

size_t JsonValue::size() const {
    switch (v_.index()) {
        case 4: return std::get<std::string>(v_).size();
        case 5: return std::get<Array>(v_).size();
        case 6: return std::get<Object>(v_).size();
        default: return 0;
    }
}

void JsonValue::push_back(JsonValue v) { as_array().push_back(std::move(v)); }

const JsonValue* JsonValue::find(std::string_view key) const {
    for (const auto& m : as_object())
        if (m.first == key) return &m.second;
    return nullptr;
}
JsonValue* JsonValue::find(std::string_view key) {
    for (auto& m : as_object())
        if (m.first == key) return &m.second;
    return nullptr;
}
JsonValue& JsonValue::operator[](std::string_view key) {
    if (JsonValue* p = find(key)) return *p;
    auto& o = as_object();
    o.emplace_back(std::string(key), JsonValue());
    return o.back().second;
}
void JsonValue::set(std::string_view key, JsonValue v) {
    if (JsonValue* p = find(key)) {
        *p = std::move(v);
        return;
    }
    as_object().emplace_back(std::string(key), std::move(v));
}
bool JsonValue::erase(std::string_view key) {
    auto& o = as_object();
    for (auto it = o.begin(); it != o.end(); ++it) {
        if (it->first == key) {
            o.erase(it);
            return true;
        }
    }
    return false;
}

bool JsonValue::operator==(const JsonValue& other) const {
    if (is_number() && other.is_number()) {
        if (is_int() && other.is_int()) return as_int() == other.as_int();
        return as_number() == other.as_number();
    }
    if (v_.index() != other.v_.index()) return false;
    switch (v_.index()) {
        case 0: return true;
        case 1: return std::get<bool>(v_) == std::get<bool>(other.v_);
        case 4: return std::get<std::string>(v_) == std::get<std::string>(other.v_);
        case 5: return std::get<Array>(v_) == std::get<Array>(other.v_);
        case 6: {
            // Objects compare as mappings (order-insensitive), like Python dicts.
            const auto& a = std::get<Object>(v_);
            const auto& b = std::get<Object>(other.v_);
            if (a.size() != b.size()) return false;
            for (const auto& m : a) {
                const JsonValue* o = other.find(m.first);
                if (!o || !(*o == m.second)) return false;
            }
            return true;
        }
    }
    return false;
}
bool JsonValue::operator!=(const JsonValue& other) const { return !(*this == other); }

// ---------------------------------------------------------------- dump

std::string json_format_double(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, r.ptr);
    // sci: [-]D[.DDD]e[+-]XX
    bool neg = false;
    size_t p = 0;
    if (sci[0] == '-') {
        neg = true;
        p = 1;
    }
    size_t epos = sci.find('e');
    std::string digits;
    for (size_t k = p; k < epos; ++k)
        if (sci[k] != '.') digits += sci[k];
    int exp10 = std::stoi(sci.substr(epos + 1));
    // strip trailing zeros of digits (keep at least one)
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    int decpt = exp10 + 1;  // position of the decimal point relative to digits start
    std::string out;
    if (neg) out += '-';
    int nd = static_cast<int>(digits.size());
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out += "0.";
            out.append(static_cast<size_t>(-decpt), '0');
            out += digits;
        } else if (decpt >= nd) {
            out += digits;
            out.append(static_cast<size_t>(decpt - nd), '0');
            out += ".0";
        } else {
            out += digits.substr(0, static_cast<size_t>(decpt));
            out += '.';
            out += digits.substr(static_cast<size_t>(decpt));
        }
    } else {
        out += digits[0];
        if (nd > 1) {
            out += '.';
            out += digits.substr(1);
        }
        int e = decpt - 1;
        out += 'e';
        out += e < 0 ? '-' : '+';
        int ae = e < 0 ? -e : e;
        if (ae < 10) out += '0';
        out += std::to_string(ae);
    }
    return out;
}

static const char kHex[] = "0123456789abcdef";

static void put_u(std::string& out, uint32_t u) {
    out += "\\u";
    out += kHex[(u >> 12) & 0xF];
    out += kHex[(u >> 8) & 0xF];
    out += kHex[(u >> 4) & 0xF];
    out += kHex[u & 0xF];
}

void json_escape_string(std::string& out, std::string_view s, bool ensure_ascii) {
    out += '"';
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    size_t n = s.size();
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c < 0x80) {
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                default:
                    // Python escapes DEL only with ensure_ascii=True
                    if (c < 0x20 || (c == 0x7f && ensure_ascii)) put_u(out, c);
                    else out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        if (!ensure_ascii) {
            out += static_cast<char>(c);
            ++i;
            continue;
        }
        // decode one UTF-8 sequence (lenient: invalid bytes become U+FFFD)
        size_t len;
        uint32_t cp = utf8_decode(s, i, len);
        if (cp == kUtf8Invalid) cp = 0xFFFD;
        if (cp >= 0x10000) {
            uint32_t v = cp - 0x10000;
            put_u(out, 0xD800 + (v >> 10));
            put_u(out, 0xDC00 + (v & 0x3FF));
        } else {
            put_u(out, cp);
        }
        i += len;
    }
    out += '"';
}

namespace {

void dump_rec(std::string& out, const JsonValue& v, const JsonDumpOptions& opt, int level) {
    switch (v.kind()) {
        case JsonValue::Kind::Null: out += "null"; return;
        case JsonValue::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
        case JsonValue::Kind::Int: out += std::to_string(v.as_int()); return;
        case JsonValue::Kind::Float: {
            double d = v.as_number();
            if (std::isnan(d)) out += "NaN";
            else if (std::isinf(d)) out += d < 0 ? "-Infinity" : "Infinity";
            else out += json_format_double(d);
            return;
        }
        case JsonValue::Kind::String: json_escape_string(out, v.as_string(), opt.ensure_ascii); return;
        case JsonValue::Kind::Array: {
            const auto& a = v.as_array();
            if (a.empty()) {
                out += "[]";
                return;
            }
            out += '[';
            std::string nl;
            if (opt.indent >= 0) {
                nl = "\n" + std::string(static_cast<size_t>(opt.indent) * (level + 1), ' ');
                out += nl;
            }
            for (size_t k = 0; k < a.size(); ++k) {
                if (k) {
                    out += opt.item_sep;
                    out += nl;
                }
                dump_rec(out, a[k], opt, level + 1);
            }
            if (opt.indent >= 0) {
                out += '\n';
                out.append(static_cast<size_t>(opt.indent) * level, ' ');
            }
            out += ']';
            return;
        }
        case JsonValue::Kind::Object: {
            const auto& o = v.as_object();
            if (o.empty()) {
                out += "{}";
                return;
            }
            std::vector<const JsonValue::Member*> ms;
            ms.reserve(o.size());
            for (const auto& m : o) ms.push_back(&m);
            if (opt.sort_keys)
                std::stable_sort(ms.begin(), ms.end(),
                                 [](const JsonValue::Member* a, const JsonValue::Member* b) {
                                     return a->first < b->first;
                                 });
            out += '{';
            std::string nl;
            if (opt.indent >= 0) {
                nl = "\n" + std::string(static_cast<size_t>(opt.indent) * (level + 1), ' ');
                out += nl;
            }
            for (size_t k = 0; k < ms.size(); ++k) {
                if (k) {
                    out += opt.item_sep;
                    out += nl;
                }
                json_escape_string(out, ms[k]->first, opt.ensure_ascii);
                out += opt.key_sep;
                dump_rec(out, ms[k]->second, opt, level + 1);
            }
            if (opt.indent >= 0) {
                out += '\n';
                out.append(static_cast<size_t>(opt.indent) * level, ' ');
            }
            out += '}';
            return;
        }
    }
}

}  // namespace

std::string json_dump(const JsonValue& v, const JsonDumpOptions& opt) {
    std::string out;
    dump_rec(out, v, opt, 0);
    return out;
}

}  // namespace ovgc
