// A mutation fuzzer for the bundled backend's GGUF reading (native/src/engine/gguf): each case is one of the seed
// files with a few random damages — bytes flipped, a count, length, type or offset overwritten with an edge value,
// the file cut short — written to a scratch file and read as the engine reads a model: GgufFile, then the language
// model and the tokenizer models built from it. A refusal (std::exception) is the expected outcome of most cases;
// anything else — a crash, a sanitizer report, a hang — is the bug this looks for. Built with
// -fsanitize=address,undefined by tests/backend/test_gguf_fuzz.py.
//   gguf_fuzz_main <scratch file> <cases> <seed> <seed.gguf>...
// Prints "case N" before each case (so a crash names it), then "done <cases> <built> <refused>".
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.hpp"
#include "engine/gguf/gguf_model.hpp"
#include "engine/gguf/gguf_tokenizer.hpp"

namespace {

std::vector<uint8_t> read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw std::runtime_error("cannot read " + path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::vector<uint8_t>& data) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

// Where the damage goes: mostly the header (metadata and tensor infos, where the reader's decisions are), sometimes
// anywhere (tensor data: the decoders must take any bytes).
size_t pick_offset(std::mt19937_64& rng, size_t size, size_t header) {
    if (size == 0)
        return 0;
    const size_t limit = (rng() % 4 != 0 && header < size) ? header : size;
    return static_cast<size_t>(rng() % limit);
}

void damage(std::mt19937_64& rng, std::vector<uint8_t>& data, size_t header) {
    static const uint64_t kEdges[] = {0, 1, 2, 3, 4, 7, 8, 9, 12, 13, 30, 31, 32, 255, 256, 0x7FFFFFFF, 0x80000000,
                                      0xFFFFFFFF, 0x100000000ULL, 0x7FFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFFULL};
    switch (rng() % 6) {
    case 0:  // flip a few bytes
        for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n && !data.empty(); ++i)
            data[pick_offset(rng, data.size(), header)] ^= static_cast<uint8_t>(1 + rng() % 255);
        break;
    case 1:    // an edge value as a u32 (types, dimension counts)
    case 2: {  // ... or a u64 (counts, lengths, dimensions, offsets)
        const size_t width = (rng() % 2 == 0) ? 4 : 8;
        const size_t at = pick_offset(rng, data.size(), header);
        if (at + width <= data.size()) {
            const uint64_t v = kEdges[rng() % (sizeof(kEdges) / sizeof(kEdges[0]))];
            std::memcpy(data.data() + at, &v, width);
        }
        break;
    }
    case 3:  // cut the file short
        data.resize(pick_offset(rng, data.size(), data.size()));
        break;
    case 4: {  // copy a run of bytes over another place (a length or type from elsewhere)
        if (data.size() < 16)
            break;
        const size_t from = pick_offset(rng, data.size() - 8, header), to = pick_offset(rng, data.size() - 8, header);
        std::memmove(data.data() + to, data.data() + from, 8);
        break;
    }
    default:  // a random byte value anywhere
        if (!data.empty())
            data[pick_offset(rng, data.size(), data.size())] = static_cast<uint8_t>(rng());
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::cerr << "usage: gguf_fuzz_main SCRATCH CASES SEED SEED.gguf...\n";
        return 2;
    }
    const std::string scratch = argv[1];
    const long cases = std::stol(argv[2]);
    std::mt19937_64 rng(std::stoull(argv[3]));
    std::vector<std::vector<uint8_t>> seeds;
    std::vector<size_t> headers;  // each seed's metadata + tensor infos: what precedes the tensor data at its end
    for (int i = 4; i < argc; ++i) {
        seeds.push_back(read_all(argv[i]));
        ovgc::gguf::GgufFile f(argv[i]);
        uint64_t data_bytes = 0;
        for (const auto& t : f.tensors())
            data_bytes += t.n_bytes;
        headers.push_back(seeds.back().size() - std::min<uint64_t>(data_bytes, seeds.back().size()) + 64);
    }
    long built = 0, refused = 0;
    for (long n = 0; n < cases; ++n) {
        std::cout << "case " << n << '\n' << std::flush;
        const size_t which = static_cast<size_t>(rng() % seeds.size());
        std::vector<uint8_t> data = seeds[which];
        for (int k = 0, m = 1 + static_cast<int>(rng() % 4); k < m; ++k)
            damage(rng, data, headers[which]);
        write_all(scratch, data);
        try {
            ovgc::gguf::GgufFile f(scratch);
            auto model = ovgc::gguf::build_language_model(f);
            auto tokenizers = ovgc::gguf::build_tokenizer_models(f);
            ++built;
        } catch (const std::exception&) {
            ++refused;
        }
    }
    std::cout << "done " << cases << ' ' << built << ' ' << refused << '\n';
    return 0;
}
