// json_parse: nlohmann-json's SAX parser (strict RFC 8259, UTF-8 validated, a leading BOM skipped) building a
// JsonValue. What nlohmann leaves to the caller is done here, the way Python's json.loads does it: duplicate
// keys (the last value wins, at the first key's position), a nesting limit, and numbers beyond double range
// (±inf; nlohmann refuses them).
#include "json/json.hpp"

#include <cmath>
#include <cstdlib>
#include <iterator>

#include <nlohmann/json.hpp>

namespace ovgc {

namespace {

constexpr size_t kMaxDepth = 512;
constexpr size_t kMaxMessage = 240;  // nlohmann quotes the offending token; a long one is cut

// A const char* iterator that records the furthest byte the parser has read, for the offset of a depth error.
struct TrackingIterator {
    using iterator_category = std::forward_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    const char* p = nullptr;
    const char** furthest = nullptr;

    reference operator*() const {
        *furthest = p;
        return *p;
    }
    TrackingIterator& operator++() {
        ++p;
        return *this;
    }
    TrackingIterator operator++(int) {
        TrackingIterator old = *this;
        ++p;
        return old;
    }
    bool operator==(const TrackingIterator& o) const { return p == o.p; }
    bool operator!=(const TrackingIterator& o) const { return p != o.p; }
};

// nlohmann's message without its "[json.exception.x.N] parse error at line L, column C: " prefix, ASCII only
// (bytes >= 0x80 of a quoted token as \xNN) and of bounded length.
// quote_token false: without nlohmann's "; last read: '...'" (after masking it would quote the masked text).
std::string describe(const nlohmann::detail::exception& ex, const std::string& last_token, bool quote_token) {
    std::string m = ex.what();
    if (!quote_token) {
        const std::string quoted = "; last read: '" + last_token + "'";
        size_t at = m.find(quoted);
        if (at != std::string::npos)
            m.erase(at, quoted.size());
    }
    if (!m.empty() && m[0] == '[') {
        size_t close = m.find("] ");
        if (close != std::string::npos)
            m.erase(0, close + 2);
    }
    if (m.rfind("parse error at line ", 0) == 0) {
        size_t colon = m.find(": ");
        if (colon != std::string::npos)
            m.erase(0, colon + 2);
    }
    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : m) {
        if (out.size() >= kMaxMessage) {
            out += "...";
            break;
        }
        if (c < 0x80) {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xF];
        }
    }
    return out;
}

// Number tokens that overflow a double, as (index among all number tokens, negative). nlohmann reports every
// number token as one number event, in document order, so the index finds the event again.
struct Overflow {
    size_t index;
    bool negative;
};

// Replaces every overflowing number token of `text` by a finite one of the same length ("0e00..."), so that
// offsets stay, and lists them. Only reached after nlohmann reported an overflow (so the text up to there is
// valid JSON); tokens after a syntax error do not matter, the second parse stops at that error.
std::string mask_overflows(std::string_view text, std::vector<Overflow>& out) {
    std::string masked(text);
    size_t index = 0;
    for (size_t i = 0; i < masked.size();) {
        const char c = masked[i];
        if (c == '"') {  // skip a string
            for (++i; i < masked.size() && masked[i] != '"'; ++i)
                if (masked[i] == '\\')
                    ++i;
            ++i;
            continue;
        }
        if (c != '-' && !(c >= '0' && c <= '9')) {
            ++i;
            continue;
        }
        size_t end = i;
        while (end < masked.size() && ((masked[end] >= '0' && masked[end] <= '9') || masked[end] == '-' ||
                                       masked[end] == '+' || masked[end] == '.' || masked[end] == 'e' ||
                                       masked[end] == 'E'))
            ++end;
        const std::string token = masked.substr(i, end - i);
        char* stop = nullptr;
        const double d = std::strtod(token.c_str(), &stop);
        if (stop == token.c_str() + token.size() && std::isinf(d) && token.size() >= 3) {
            out.push_back({index, c == '-'});
            masked.replace(i, token.size(), "0e" + std::string(token.size() - 2, '0'));
        }
        ++index;
        i = end;
    }
    return masked;
}

class Builder final : public nlohmann::json::json_sax_t {
public:
    // overflows: the number tokens masked by mask_overflows (empty on the first parse)
    explicit Builder(const std::vector<Overflow>& overflows) : overflows_(overflows) {}

    bool null() override { return put(JsonValue(nullptr)); }
    bool boolean(bool b) override { return put(JsonValue(b)); }
    bool number_integer(number_integer_t v) override { return number(JsonValue(static_cast<int64_t>(v))); }
    bool number_unsigned(number_unsigned_t v) override { return number(JsonValue(static_cast<uint64_t>(v))); }
    bool number_float(number_float_t v, const string_t&) override { return number(JsonValue(static_cast<double>(v))); }
    bool string(string_t& s) override { return put(JsonValue(std::move(s))); }
    bool binary(binary_t&) override { return true; }  // not produced by the JSON format

    bool start_object(std::size_t) override { return open(JsonValue::object()); }
    bool key(string_t& k) override {
        key_ = std::move(k);
        return true;
    }
    bool end_object() override {
        open_.pop_back();
        return true;
    }
    bool start_array(std::size_t) override { return open(JsonValue::array()); }
    bool end_array() override {
        open_.pop_back();
        return true;
    }

    bool parse_error(std::size_t position, const std::string& last_token,
                     const nlohmann::detail::exception& ex) override {
        error_offset = position > 0 ? position - 1 : 0;  // nlohmann counts the offending byte as read
        error = describe(ex, last_token, overflows_.empty());
        overflow = ex.id == 406;  // out_of_range.406: number overflow
        return false;
    }

    JsonValue root;
    bool too_deep = false;
    bool overflow = false;
    size_t error_offset = 0;
    std::string error;

private:
    bool number(JsonValue v) {
        if (next_overflow_ < overflows_.size() && overflows_[next_overflow_].index == numbers_) {
            v = JsonValue(overflows_[next_overflow_].negative ? -HUGE_VAL : HUGE_VAL);
            ++next_overflow_;
        }
        ++numbers_;
        return put(std::move(v));
    }

    // Places a value in the innermost open container (or as the root); returns where it went.
    JsonValue* place(JsonValue v) {
        if (open_.empty()) {
            root = std::move(v);
            return &root;
        }
        JsonValue& parent = *open_.back();
        if (parent.is_array()) {
            auto& items = parent.as_array();
            items.push_back(std::move(v));
            return &items.back();
        }
        if (JsonValue* existing = parent.find(key_)) {  // duplicate key: the last value wins, in place
            *existing = std::move(v);
            return existing;
        }
        auto& members = parent.as_object();
        members.emplace_back(std::move(key_), std::move(v));
        return &members.back().second;
    }
    bool put(JsonValue v) {
        place(std::move(v));
        return true;
    }
    // Only the innermost container grows, so the pointers to the outer ones stay valid.
    bool open(JsonValue container) {
        if (open_.size() >= kMaxDepth) {
            too_deep = true;
            return false;
        }
        open_.push_back(place(std::move(container)));
        return true;
    }

    const std::vector<Overflow>& overflows_;
    size_t next_overflow_ = 0;
    size_t numbers_ = 0;
    std::vector<JsonValue*> open_;
    std::string key_;
};

[[noreturn]] void fail(size_t offset, const std::string& what) {
    throw JsonError("JSON parse error at offset " + std::to_string(offset) + ": " + what);
}

// One strict parse of `text`; false with b.overflow set when a number overflowed (the caller retries masked).
bool parse_into(std::string_view text, Builder& b) {
    const char* furthest = text.data();
    TrackingIterator first{text.data(), &furthest};
    TrackingIterator last{text.data() + text.size(), &furthest};
    if (nlohmann::json::sax_parse(first, last, &b, nlohmann::json::input_format_t::json, /*strict=*/true))
        return true;
    if (b.too_deep)
        fail(static_cast<size_t>(furthest - text.data()), "nesting too deep (limit 512)");
    if (b.overflow)
        return false;
    fail(b.error_offset, b.error);
}

}  // namespace

JsonValue json_parse(std::string_view text) {
    const std::vector<Overflow> none;
    Builder b(none);
    if (parse_into(text, b))
        return std::move(b.root);
    // A number beyond double range: Python's json.loads gives ±inf; parse again with those tokens masked.
    std::vector<Overflow> overflows;
    const std::string masked = mask_overflows(text, overflows);
    Builder again(overflows);
    if (parse_into(masked, again))
        return std::move(again.root);
    fail(again.error_offset, again.error);
}

}  // namespace ovgc
