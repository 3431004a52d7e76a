// Turns generated tokens into text chunks: a chunk is emitted once it is stable (three tokens of
// look-behind, flushed at a newline), never ends inside a UTF-8 sequence or on U+FFFD.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/tokenizer.hpp"

namespace ovgc {

enum class StreamStatus { Running = 0, Stop = 1, Cancel = 2 };

class TextStreamer {
public:
    using Callback = std::function<StreamStatus(const std::string&)>;
    TextStreamer(Tokenizer& tok, Callback cb) : tok_(tok), cb_(std::move(cb)) {}

    StreamStatus put(int64_t token) {
        push(token);
        return take(tok_.decode(cache_));
    }
    StreamStatus end();

    // put() in two halves, for decoding several streamers' tokens in one detokenizer call: push() the token, decode
    // pending() (the tokens since the last newline) elsewhere, then take() that text.
    void push(int64_t token) { cache_.push_back(token); }
    // Tokens cached without decoding them now, as GenAI's write() of several tokens caches all but its last: their
    // printable lengths are decoded once the delay reaches them (echo's prompt ahead of the first new token).
    void push_undecoded(const std::vector<int64_t>& tokens);
    const std::vector<int64_t>& pending() const { return cache_; }
    StreamStatus take(const std::string& text);

private:
    StreamStatus emit(const std::string& s) { return s.empty() ? StreamStatus::Running : cb_(s); }
    long length_at(size_t position);  // the printable length of the text of cache_[0..position]
    Tokenizer& tok_;
    Callback cb_;
    std::vector<int64_t> cache_;
    std::vector<long> lengths_;
    size_t printed_ = 0;
};

}  // namespace ovgc
