// GenAI's string form of decoded results (DecodedResults / WhisperDecodedResults operator<<): one text alone,
// else "score: text" per result, one per line. Shared by the LLM and Whisper results.
#pragma once

#include <string>
#include <vector>

namespace ovgc {

inline std::string decoded_texts_string(const std::vector<std::string>& texts, const std::vector<float>& scores) {
    if (texts.empty())
        return {};
    if (texts.size() == 1)
        return texts[0];
    std::string out;
    for (size_t i = 0; i < texts.size(); ++i) {
        if (i)
            out += '\n';
        out += std::to_string(i < scores.size() ? scores[i] : 0.0f) + ": " + texts[i];
    }
    return out;
}

}  // namespace ovgc
