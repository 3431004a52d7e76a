// Tokenizer::decode_batch (native/src/engine/tokenizer.cpp) against Tokenizer::decode, row by row: the batching
// engine decodes every request's streamed tokens of a step in one detokenizer call. Random batches of random rows
// (special and low ids often, lengths 0..23), a fixed seed.
//   decode_batch_main <tokenizer dir> <libopenvino_tokenizers.so> <batches> <seed>
// Prints "batch 0|1" (whether a padding token was found), then "mismatches N"; every mismatch on its own line.
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <openvino/openvino.hpp>

#include "engine/tokenizer.hpp"

int main(int argc, char** argv) {
    if (argc != 5) {
        std::cerr << "usage: decode_batch_main DIR EXTENSION BATCHES SEED\n";
        return 2;
    }
    ov::Core core;
    core.add_extension(argv[2]);
    ovgc::Tokenizer tok(core, argv[1]);
    std::cout << "batch " << (tok.can_decode_batch() ? 1 : 0) << "\n";
    // the vocabulary size: the VocabDecoder's token table
    uint64_t vocab = 0;
    for (auto& op : core.read_model(std::string(argv[1]) + "/openvino_detokenizer.xml")->get_ordered_ops())
        if (std::string(op->get_type_name()) == "VocabDecoder" && op->get_input_partial_shape(1).is_static())
            vocab = op->get_input_shape(1)[0];
    if (vocab == 0) {
        std::cerr << "no VocabDecoder with a static token table\n";
        return 2;
    }
    const int batches = std::stoi(argv[3]);
    std::mt19937_64 rng(std::stoull(argv[4]));
    int mismatches = 0;
    for (int i = 0; i < batches; ++i) {
        std::vector<std::vector<int64_t>> rows(2 + rng() % 8);
        for (auto& row : rows) {
            const size_t len = rng() % 24;
            for (size_t k = 0; k < len; ++k)
                row.push_back(static_cast<int64_t>(rng() % 4 == 0 ? rng() % 20 : rng() % vocab));
        }
        std::vector<const std::vector<int64_t>*> ptrs;
        for (auto& row : rows)
            ptrs.push_back(&row);
        const std::vector<std::string> got = tok.decode_batch(ptrs);
        for (size_t b = 0; b < rows.size(); ++b) {
            const std::string want = tok.decode(rows[b]);
            if (got.size() != rows.size() || got[b] != want) {
                ++mismatches;
                std::cout << "mismatch batch " << i << " row " << b << ":";
                for (auto id : rows[b])
                    std::cout << " " << id;
                std::cout << "\n";
            }
        }
    }
    std::cout << "mismatches " << mismatches << "\n";
    return 0;
}
