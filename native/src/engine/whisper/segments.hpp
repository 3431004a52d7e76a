// Timestamped segments from one 30 s window's tokens, as GenAI's extract_segments: pairs of timestamp tokens
// enclose a segment; an open last segment is kept only when it is the window's only one; the offset of the next
// window is the last closing timestamp (or the whole window when nothing is left open).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ovgc {

struct WhisperSegment {
    float start = 0.0f;
    float end = -1.0f;  // -1: started but never closed
    std::vector<int64_t> tokens;
};

struct ExtractedSegments {
    std::vector<WhisperSegment> segments;
    size_t last_offset = 0;                            // frames to advance
    std::vector<int64_t> text_tokens;                  // the segments' tokens, in order
    std::vector<std::pair<size_t, size_t>> ranges;     // [begin, end) of each segment in the window's tokens
};

ExtractedSegments extract_segments(const std::vector<int64_t>& tokens, int64_t timestamp_begin, size_t nb_max_frames,
                                   float time_precision, float time_offset);

}  // namespace ovgc
