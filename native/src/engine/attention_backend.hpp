// The attention/KV-cache form an LLMEngine runs its model in: the stateful SDPA model (StatefulBackend,
// stateful_backend.*) or the PagedAttention model over block caches (PagedBackend, paged_backend.*). It owns what
// differs between them: the model rewrite before compilation, the cache, how a prompt or a decode step becomes
// the request's inputs, and each form's rules for keeping and reusing the cache (upstream's stateful pipeline and
// its PagedAttention pipeline differ there). LLMEngine's decode loop calls only this interface; it keeps the token
// bookkeeping (which tokens are cached, how many rows) and runs the inferences.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <openvino/openvino.hpp>

namespace ovgc {

class AttentionBackend {
public:
    virtual ~AttentionBackend() = default;

    // After compilation: binds to the request (which outlives the backend) and allocates what the cache needs.
    virtual void bind(const ov::CompiledModel& compiled, ov::InferRequest& request) = 0;
    // Before the main compilation: starts compiling, on another thread, the further forms of the model some steps
    // run on (with the main compilation's device and properties); attach_forms (after bind) waits for them and
    // binds them to the same cache. Default: none, every step runs on the bound request.
    virtual void start_forms(ov::Core& core, const std::string& device, const ov::AnyMap& properties) {
        (void)core, (void)device, (void)properties;
    }
    virtual void attach_forms() {}
    // The request the last prepare_* call filled: the engine runs it and reads the logits from it.
    virtual ov::InferRequest& step_request() = 0;
    // Inferences prepared so far on a further form (attach_forms) and on the main one; {0, 0}: not counted.
    virtual std::pair<size_t, size_t> form_steps() const { return {0, 0}; }
    // True when one-token steps of a single sequence run on a form of their own, so they leave the main form's
    // input shape (and what the plugin prepared for it) as the last several-token inference left it.
    virtual bool one_token_steps_keep_main_shape() const { return false; }

    // ---- cache
    virtual void reset() = 0;            // nothing cached
    virtual void trim(size_t keep) = 0;  // one cached sequence: it keeps its first `keep` tokens (keep > 0)
    // Beam search ended with several beams cached: keeps only the first tokens of the prompt (`prompt_len`
    // tokens long), as upstream does (its PA prefix cache keeps the prompt's whole blocks; its stateful chat trims
    // the turn). Returns how many stay cached; 0: nothing worth keeping (the caller resets).
    virtual size_t keep_prompt_after_beams(size_t prompt_len, bool chat) = 0;

    // ---- reuse rules
    // true: the cache outlives a request (PA's prefix cache, also across chats); false: only a chat keeps it
    // from one turn to the next (and only while its history continues), as upstream's stateful pipeline.
    virtual bool keeps_cache_between_requests() const = 0;
    // Whether this request may reuse a common prefix with what is cached.
    virtual bool reuses_prefix(bool chat) const = 0;
    // Of `common` tokens shared by the cache (holding `cached` tokens) and the prompt, how many can be kept.
    virtual size_t reusable_prefix(size_t common, size_t cached) const = 0;
    // num_input_tokens: the whole prompt (true, as GenAI's PA pipeline) or only the tokens fed (false).
    virtual bool counts_reused_prompt_tokens() const = 0;

    // ---- inputs
    // The prompt's `feed` uncached tokens as the sizes of the inferences that feed them (checked against the
    // backend's batch limits; throws what upstream reports when they cannot be met).
    virtual std::vector<size_t> prefill_chunks(size_t feed) const = 0;
    // Inputs of one prefill inference: `n` tokens of the single sequence following `cached` cached ones.
    virtual void prepare_prefill(const int64_t* ids, size_t n, size_t cached) = 0;
    // Inputs of one decode step: token b continues the sequence in row parents[b] of the last inference;
    // `cached` tokens are in the cache of each row.
    virtual void prepare_decode(const std::vector<int64_t>& ids, const std::vector<int32_t>& parents, size_t cached) = 0;
    // Prompt lookup (prompt_lookup.hpp): the most tokens one verification inference may feed (0: this form cannot
    // verify drafts), and its inputs: `n` tokens of the single sequence after `cached` cached ones, with logits for
    // every one of them (rows 0..n-1).
    virtual size_t max_verify_tokens() const { return 0; }
    virtual void prepare_verify(const int64_t* ids, size_t n, size_t cached) {
        (void)ids, (void)n, (void)cached;
        throw std::logic_error("this attention backend cannot verify prompt-lookup drafts");
    }
    // The row a sampled (not beam-searched) sequence's next step continues, given its row in the last inference.
    virtual int32_t sampled_parent_row(size_t row) const { return static_cast<int32_t>(row); }

    // ---- streaming STOP / CANCEL
    // Decode steps still run after the streamer's STOP/CANCEL (text or token streamer): GenAI's PA pipeline
    // notices it a step late (2: one more token returned, one more step counted); its stateful pipeline at once.
    virtual size_t steps_after_stream_stop() const = 0;
    // After a STOP/CANCEL in a chat, whether the last token is still fed to the cache (upstream's stateful loop
    // streams it while the inference that feeds it is already running).
    virtual bool feeds_last_token_after_stop() const = 0;
};

}  // namespace ovgc
