#include "engine/whisper/segments.hpp"

#include <optional>

namespace ovgc {

ExtractedSegments extract_segments(const std::vector<int64_t>& tokens, int64_t timestamp_begin, size_t nb_max_frames,
                                   float time_precision, float time_offset) {
    ExtractedSegments out;
    std::optional<int64_t> open;
    size_t open_at = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const int64_t t = tokens[i];
        if (t < timestamp_begin)
            continue;
        if (!open) {
            open = t;
            open_at = i;
            continue;
        }
        if (*open == t)
            continue;  // a repeated timestamp is a start again (the model's known duplicate), not an end
        WhisperSegment seg;
        seg.tokens.assign(tokens.begin() + open_at + 1, tokens.begin() + i);
        seg.start = (*open - timestamp_begin) * time_precision + time_offset;
        seg.end = (t - timestamp_begin) * time_precision + time_offset;
        out.text_tokens.insert(out.text_tokens.end(), seg.tokens.begin(), seg.tokens.end());
        out.segments.push_back(std::move(seg));
        out.last_offset = static_cast<size_t>(t - timestamp_begin) * 2;  // one timestamp step is 2 frames (0.02 s)
        out.ranges.emplace_back(open_at + 1, i);
        open.reset();
    }
    const bool has_more_tokens = !tokens.empty() && open_at < tokens.size() - 1;
    if (open && has_more_tokens && out.segments.empty()) {
        WhisperSegment seg;
        seg.tokens.assign(tokens.begin() + open_at + 1, tokens.end());
        seg.start = (*open - timestamp_begin) * time_precision + time_offset;
        seg.end = -1.0f;
        out.text_tokens.insert(out.text_tokens.end(), seg.tokens.begin(), seg.tokens.end());
        out.segments.push_back(std::move(seg));
        out.last_offset = nb_max_frames;
        out.ranges.emplace_back(open_at + 1, tokens.size());
    }
    if (!open)
        out.last_offset = nb_max_frames;  // closed pairs up to the end: nothing continues into the next window
    return out;
}

}  // namespace ovgc
