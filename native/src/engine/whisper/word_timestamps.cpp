#include "engine/whisper/word_timestamps.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include <openvino/op/add.hpp>
#include <openvino/op/constant.hpp>
#include <openvino/op/convert_like.hpp>
#include <openvino/op/divide.hpp>
#include <openvino/op/gather.hpp>
#include <openvino/op/matmul.hpp>
#include <openvino/op/multiply.hpp>
#include <openvino/op/scaled_dot_product_attention.hpp>
#include <openvino/op/select.hpp>
#include <openvino/op/shape_of.hpp>
#include <openvino/op/softmax.hpp>
#include <openvino/op/sqrt.hpp>
#include <openvino/op/transpose.hpp>

namespace ovgc {

namespace {

constexpr float kSecondsPerAttentionFrame = 0.02f;  // the encoder's 1500 positions over 30 s
constexpr size_t kMedianFilterWidth = 7;

// softmax(q * scale @ k^T + mask) @ v in place of `sdpa`; returns the scores (before the softmax).
ov::Output<ov::Node> decompose(const std::shared_ptr<ov::op::v13::ScaledDotProductAttention>& sdpa) {
    using namespace ov::op;
    const std::string name = sdpa->get_friendly_name();
    if (sdpa->get_input_size() > 5)
        throw std::runtime_error("cross-attention '" + name + "' has an attention sink, which Whisper does not use");
    if (sdpa->get_causal())
        throw std::runtime_error("cross-attention '" + name + "' is causal, which Whisper's is not");
    const ov::Output<ov::Node> q = sdpa->input_value(0), k = sdpa->input_value(1), v = sdpa->input_value(2);
    const ov::PartialShape k_shape = k.get_partial_shape();
    if (k_shape.rank().is_dynamic() || k_shape.rank().get_length() < 2)
        throw std::runtime_error("cross-attention '" + name + "' has keys of shape " + k_shape.to_string());
    const auto rank = static_cast<size_t>(k_shape.rank().get_length());

    ov::Output<ov::Node> scale;
    if (sdpa->get_input_size() == 5) {
        scale = sdpa->input_value(4);
    } else {  // 1 / sqrt(head size), computed in the query's type
        auto q_shape = std::make_shared<v3::ShapeOf>(q, ov::element::i32);
        auto head_size = std::make_shared<v8::Gather>(q_shape, v0::Constant::create(ov::element::i32, {}, {-1}),
                                                      v0::Constant::create(ov::element::i32, {}, {0}));
        auto one = std::make_shared<v1::ConvertLike>(v0::Constant::create(ov::element::i32, {}, {1}), q);
        auto root = std::make_shared<v0::Sqrt>(std::make_shared<v1::ConvertLike>(head_size, q));
        scale = std::make_shared<v1::Divide>(one, root);
    }
    std::vector<int64_t> order(rank);
    for (size_t i = 0; i < rank; ++i)
        order[i] = static_cast<int64_t>(i);
    std::swap(order[rank - 1], order[rank - 2]);
    auto k_t = std::make_shared<v1::Transpose>(k, v0::Constant::create(ov::element::i64, {rank}, order));

    // GenAI scales after the product only when that product is the smaller tensor (static shapes)
    bool scale_after = false;
    const ov::PartialShape q_shape = q.get_partial_shape(), s_shape = scale.get_partial_shape();
    if (q_shape.is_static() && s_shape.is_static() && ov::shape_size(s_shape.to_shape()) == 1) {
        const ov::PartialShape product =
            std::make_shared<v0::MatMul>(std::make_shared<v1::Multiply>(q, scale), k_t)->get_output_partial_shape(0);
        scale_after = product.is_static() && ov::shape_size(q_shape.to_shape()) > ov::shape_size(product.to_shape());
    }
    ov::Output<ov::Node> scores = scale_after
                                      ? std::make_shared<v1::Multiply>(std::make_shared<v0::MatMul>(q, k_t), scale)->output(0)
                                      : std::make_shared<v0::MatMul>(std::make_shared<v1::Multiply>(q, scale), k_t)->output(0);
    if (sdpa->get_input_size() > 3) {
        ov::Output<ov::Node> mask = sdpa->input_value(3);
        if (mask.get_element_type() == ov::element::boolean) {  // true: attend
            auto zero = std::make_shared<v1::ConvertLike>(v0::Constant::create(ov::element::i32, {}, {0}), q);
            auto minus_inf = std::make_shared<v1::ConvertLike>(
                v0::Constant::create(ov::element::f32, {}, {-std::numeric_limits<float>::infinity()}), scores);
            mask = std::make_shared<v1::Select>(mask, zero, minus_inf);
        }
        scores = std::make_shared<v1::Add>(scores, mask)->output(0);
    }
    auto out = std::make_shared<v0::MatMul>(std::make_shared<v8::Softmax>(scores, -1), v);
    out->set_friendly_name(name);
    ov::replace_node(sdpa, out);
    return scores;
}

// ---------------------------------------------------------------- the alignment matrix

// Softmax over frames, standardisation over tokens (population std, at least 1e-6), a median filter over frames
// (width 7, the window cut at the edges; an even count averages its two middle values): in place, one head.
void normalise_head(std::vector<float>& m, size_t rows, size_t cols) {
    for (size_t r = 0; r < rows; ++r) {
        float* row = m.data() + r * cols;
        float max_value = -std::numeric_limits<float>::infinity();
        for (size_t c = 0; c < cols; ++c)
            max_value = std::max(max_value, row[c]);
        float sum = 0.0f;
        for (size_t c = 0; c < cols; ++c) {
            row[c] = std::exp(row[c] - max_value);
            sum += row[c];
        }
        for (size_t c = 0; c < cols; ++c)
            row[c] /= sum;
    }
    for (size_t c = 0; c < cols; ++c) {
        float sum = 0.0f;
        for (size_t r = 0; r < rows; ++r)
            sum += m[r * cols + c];
        const float mean = sum / static_cast<float>(rows);
        float squares = 0.0f;
        for (size_t r = 0; r < rows; ++r) {
            const float d = m[r * cols + c] - mean;
            squares += d * d;
        }
        const float sd = std::max(std::sqrt(squares / static_cast<float>(rows)), 1e-6f);
        for (size_t r = 0; r < rows; ++r)
            m[r * cols + c] = (m[r * cols + c] - mean) / sd;
    }
    const size_t half = kMedianFilterWidth / 2;
    std::vector<float> filtered(m.size());
    std::vector<float> window;
    for (size_t r = 0; r < rows; ++r) {
        const float* row = m.data() + r * cols;
        for (size_t c = 0; c < cols; ++c) {
            const size_t lo = c >= half ? c - half : 0, hi = std::min(cols, c + half + 1);
            window.assign(row + lo, row + hi);
            const size_t mid = window.size() / 2;
            std::nth_element(window.begin(), window.begin() + mid, window.end());
            float median = window[mid];
            if (window.size() % 2 == 0)
                median = (*std::max_element(window.begin(), window.begin() + mid) + median) / 2.0f;
            filtered[r * cols + c] = median;
        }
    }
    m.swap(filtered);
}

// Dynamic time warping over a cost matrix [rows, cols] (ties: diagonal only when strictly cheapest, then up only when
// strictly cheapest, else left); the path's (row, col) pairs from (0, 0) to (rows - 1, cols - 1).
std::vector<std::pair<size_t, size_t>> dtw_path(const std::vector<float>& cost_in, size_t rows, size_t cols) {
    const size_t w = cols + 1;
    std::vector<float> cost((rows + 1) * w, std::numeric_limits<float>::infinity());
    std::vector<unsigned char> step((rows + 1) * w, 0);
    cost[0] = 0.0f;
    for (size_t j = 0; j <= cols; ++j)
        step[j] = 2;
    for (size_t i = 0; i <= rows; ++i)
        step[i * w] = 1;
    for (size_t j = 1; j <= cols; ++j) {
        for (size_t i = 1; i <= rows; ++i) {
            const float diag = cost[(i - 1) * w + j - 1], up = cost[(i - 1) * w + j], left = cost[i * w + j - 1];
            float best;
            unsigned char s;
            if (diag < up && diag < left) {
                best = diag;
                s = 0;
            } else if (up < diag && up < left) {
                best = up;
                s = 1;
            } else {
                best = left;
                s = 2;
            }
            cost[i * w + j] = cost_in[(i - 1) * cols + (j - 1)] + best;
            step[i * w + j] = s;
        }
    }
    std::vector<std::pair<size_t, size_t>> path;
    size_t i = rows, j = cols;
    while (i > 0 || j > 0) {
        path.emplace_back(i > 0 ? i - 1 : 0, j > 0 ? j - 1 : 0);
        const unsigned char s = step[i * w + j];
        if (s == 0 && i > 0 && j > 0) {
            --i;
            --j;
        } else if (s == 1 && i > 0) {
            --i;
        } else if (s == 2 && j > 0) {
            --j;
        } else {
            throw std::runtime_error("word timestamps: the time warping's path left its matrix");
        }
    }
    std::reverse(path.begin(), path.end());
    return path;
}

// ---------------------------------------------------------------- words

struct Split {
    std::vector<std::string> words;
    std::vector<std::vector<int64_t>> tokens;
};

// Pieces that decode to whole characters: tokens are gathered until what they decode to holds no U+FFFD (a
// half-decoded UTF-8 sequence); what never completes is dropped.
Split split_on_characters(const std::vector<int64_t>& tokens, Tokenizer& tokenizer) {
    static const std::string kReplacement = "\xEF\xBF\xBD";
    Split out;
    std::vector<int64_t> current;
    for (const int64_t t : tokens) {
        current.push_back(t);
        std::string text = tokenizer.decode(current);
        if (text.find(kReplacement) == std::string::npos) {
            out.words.push_back(std::move(text));
            out.tokens.push_back(std::move(current));
            current.clear();
        }
    }
    return out;
}

std::string trimmed(const std::string& s) {
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
        ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
        --e;
    return s.substr(b, e - b);
}

// openai-whisper's split on spaces: a piece starts a new word when it is special, starts with a space or is one
// punctuation character; otherwise it joins the word before.
Split split_on_spaces(const std::vector<int64_t>& tokens, Tokenizer& tokenizer) {
    const Split pieces = split_on_characters(tokens, tokenizer);
    const int64_t eot = tokenizer.eos_token_id();
    Split out;
    for (size_t i = 0; i < pieces.words.size(); ++i) {
        const std::string& piece = pieces.words[i];
        const std::vector<int64_t>& ids = pieces.tokens[i];
        const bool special = !ids.empty() && ids[0] >= eot;
        const bool spaced = !piece.empty() && std::isspace(static_cast<unsigned char>(piece[0]));
        const std::string bare = trimmed(piece);
        const bool punctuation = bare.size() == 1 && std::ispunct(static_cast<unsigned char>(bare[0]));
        if (out.words.empty() || special || spaced || punctuation) {
            out.words.push_back(piece);
            out.tokens.push_back(ids);
        } else {
            out.words.back() += piece;
            out.tokens.back().insert(out.tokens.back().end(), ids.begin(), ids.end());
        }
    }
    return out;
}

bool writes_without_spaces(const std::string& language) {
    static const std::set<std::string> languages = {"zh", "ja", "th", "lo", "my", "yue"};
    return languages.count(language) > 0;
}

// A word longer than twice the median word duration (at most 0.7 s) is cut to that length at a sentence end: its
// end when it is a sentence mark, its start when the word before is one.
void cut_long_words_at_sentence_ends(std::vector<WhisperWord>& words) {
    std::vector<float> durations;
    for (const auto& w : words)
        if (w.end_ts - w.start_ts > 0.0f)
            durations.push_back(w.end_ts - w.start_ts);
    if (durations.empty())
        return;
    std::sort(durations.begin(), durations.end());
    const size_t mid = durations.size() / 2;
    float median = durations.size() % 2 == 0 ? (durations[mid - 1] + durations[mid]) / 2.0f : durations[mid];
    median = std::min(0.7f, median);
    const float longest = median * 2.0f;
    static const std::string marks = ".\xE3\x80\x82!\xEF\xBC\x81?\xEF\xBC\x9F";  // . 。 ! ！ ? ？
    for (size_t i = 1; i < words.size(); ++i) {
        if (words[i].end_ts - words[i].start_ts <= longest)
            continue;
        if (marks.find(words[i].word) != std::string::npos)
            words[i].end_ts = words[i].start_ts + longest;
        else if (marks.find(words[i - 1].word) != std::string::npos)
            words[i].start_ts = words[i].end_ts - longest;
    }
}

// Opening punctuation (a word " (" ...) joins the word after it, closing punctuation (a one-character word) the
// word before it; the emptied words go.
std::vector<WhisperWord> merge_punctuation(std::vector<WhisperWord> words) {
    if (words.size() < 2)
        return words;
    static const std::string opening = "\"'\xE2\x80\x9C\xC2\xBF([{-";  // " ' “ ¿ ( [ { -
    static const std::string closing =
        "\"'.\xE3\x80\x82,\xEF\xBC\x8C!\xEF\xBC\x81?\xEF\xBC\x9F:\xEF\xBC\x9A\xE2\x80\x9D)]}\xE3\x80\x81";
    size_t next = words.size() - 1;
    for (size_t i = words.size() - 1; i-- > 0;) {
        WhisperWord& w = words[i];
        if (w.word.size() > 1 && w.word[0] == ' ' && opening.find(w.word.substr(1)) != std::string::npos) {
            WhisperWord& after = words[next];
            after.word = w.word + after.word;
            after.token_ids.insert(after.token_ids.begin(), w.token_ids.begin(), w.token_ids.end());
            w.word.clear();
            w.token_ids.clear();
        } else {
            next = i;
        }
    }
    size_t prev = 0;
    for (size_t j = 1; j < words.size(); ++j) {
        WhisperWord& before = words[prev];
        WhisperWord& w = words[j];
        if (!before.word.empty() && before.word.back() != ' ' && w.word.size() == 1 &&
            closing.find(w.word) != std::string::npos) {
            before.word += w.word;
            before.token_ids.insert(before.token_ids.end(), w.token_ids.begin(), w.token_ids.end());
            w.word.clear();
            w.token_ids.clear();
        } else {
            prev = j;
        }
    }
    std::vector<WhisperWord> out;
    for (auto& w : words)
        if (!w.word.empty())
            out.push_back(std::move(w));
    return out;
}

}  // namespace

std::string cross_attention_scores_name(size_t layer) {
    return "cross_attention_scores_" + std::to_string(layer);
}

size_t expose_cross_attention_scores(const std::shared_ptr<ov::Model>& model) {
    std::vector<std::shared_ptr<ov::op::v13::ScaledDotProductAttention>> found;
    for (const auto& op : model->get_ordered_ops())
        if (auto sdpa = ov::as_type_ptr<ov::op::v13::ScaledDotProductAttention>(op))
            if (sdpa->get_friendly_name().find("encoder_attn") != std::string::npos)
                found.push_back(sdpa);
    for (size_t layer = 0; layer < found.size(); ++layer) {
        const ov::Output<ov::Node> scores = decompose(found[layer]);
        model->add_output(scores).add_names({cross_attention_scores_name(layer)});
    }
    model->validate_nodes_and_infer_types();
    return found.size();
}

std::vector<WhisperWord> window_word_timestamps(const std::vector<HeadScores>& heads, size_t sot_size,
                                                const std::vector<int64_t>& text, Tokenizer& tokenizer,
                                                size_t active_frames, float time_offset, const std::string& language) {
    if (heads.empty() || text.empty())
        return {};
    const size_t rows = heads[0].tokens, frames = std::min(active_frames / 2, heads[0].frames);
    if (rows != sot_size + 1 + text.size())
        throw std::runtime_error("word timestamps: the alignment pass scored " + std::to_string(rows) +
                                 " tokens, expected " + std::to_string(sot_size + 1 + text.size()));
    if (frames == 0)
        return {};
    // mean over the heads of each normalised head, negated: a cost, low where the text attends
    std::vector<float> cost(rows * frames, 0.0f);
    for (const HeadScores& h : heads) {
        if (h.tokens != rows || h.frames < frames || h.data.size() != h.tokens * h.frames)
            throw std::runtime_error("word timestamps: the alignment heads' scores differ in shape");
        std::vector<float> m(rows * frames);
        for (size_t r = 0; r < rows; ++r)
            std::copy_n(h.data.data() + r * h.frames, frames, m.data() + r * frames);
        normalise_head(m, rows, frames);
        for (size_t i = 0; i < m.size(); ++i)
            cost[i] += m[i];
    }
    const float n_heads = static_cast<float>(heads.size());
    for (float& c : cost)
        c = -c / n_heads;
    // the rows that predicted the text tokens: from the no-timestamps token's to the one before eos's
    const size_t first = sot_size, count = text.size();
    const std::vector<float> text_cost(cost.begin() + first * frames, cost.begin() + (first + count) * frames);
    const auto path = dtw_path(text_cost, count, frames);

    std::vector<float> jump_times;  // the time at which the path enters each token's row
    for (size_t i = 0; i < path.size(); ++i)
        if (i == 0 || path[i].first != path[i - 1].first)
            jump_times.push_back(static_cast<float>(path[i].second) * kSecondsPerAttentionFrame);

    Split split = writes_without_spaces(language) ? split_on_characters(text, tokenizer) : split_on_spaces(text, tokenizer);
    std::vector<WhisperWord> words;
    size_t boundary = 0;
    for (size_t i = 0; i + 1 < split.words.size(); ++i) {  // the last word is eos's
        const size_t end = boundary + split.tokens[i].size();
        if (end >= jump_times.size())
            break;
        words.push_back({split.words[i], split.tokens[i], jump_times[boundary] + time_offset,
                         jump_times[end] + time_offset});
        boundary = end;
    }
    cut_long_words_at_sentence_ends(words);
    return merge_punctuation(std::move(words));
}

}  // namespace ovgc
