#include "engine/text_streamer.hpp"

#include "common/utf8.hpp"

namespace ovgc {

namespace {
bool ends_with_replacement(const std::string& t) {
    return t.size() >= 3 && t.compare(t.size() - 3, 3, "\xef\xbf\xbd") == 0;
}
constexpr long kUndecoded = -2;  // a length not decoded yet (push_undecoded)
}  // namespace

void TextStreamer::push_undecoded(const std::vector<int64_t>& tokens) {
    cache_.insert(cache_.end(), tokens.begin(), tokens.end());
    lengths_.resize(lengths_.size() + tokens.size(), kUndecoded);
}

long TextStreamer::length_at(size_t position) {
    if (lengths_[position] == kUndecoded) {
        const std::string text = tok_.decode(std::vector<int64_t>(cache_.begin(), cache_.begin() + position + 1));
        lengths_[position] = ends_with_replacement(text) ? -1 : static_cast<long>(text.size());
    }
    return lengths_[position];
}

StreamStatus TextStreamer::take(const std::string& text) {
    lengths_.push_back(static_cast<long>(text.size()));

    if (!text.empty() && text.back() == '\n' && text.size() > printed_) {
        std::string chunk = text.substr(printed_);
        cache_.clear();
        lengths_.clear();
        printed_ = 0;
        return emit(chunk);
    }
    constexpr size_t kDelay = 3;
    if (lengths_.size() < kDelay)
        return StreamStatus::Running;
    if (ends_with_replacement(text)) {
        lengths_.back() = -1;
        return StreamStatus::Running;
    }
    long until = length_at(lengths_.size() - kDelay);
    if (until != -1 && static_cast<size_t>(until) > printed_ && static_cast<size_t>(until) <= text.size()) {
        std::string prefix = text.substr(0, static_cast<size_t>(until));
        size_t complete = utf8_complete_prefix(prefix);
        if (complete > printed_) {
            std::string chunk = text.substr(printed_, complete - printed_);
            printed_ = complete;
            return emit(chunk);
        }
    }
    return StreamStatus::Running;
}

StreamStatus TextStreamer::end() {
    std::string text = tok_.decode(cache_);
    StreamStatus st = StreamStatus::Running;
    if (text.size() > printed_)
        st = emit(text.substr(printed_));
    cache_.clear();
    lengths_.clear();
    printed_ = 0;
    return st;
}

}  // namespace ovgc
