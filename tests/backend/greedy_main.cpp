// Reads rows of float32 logits (little-endian, binary) from the file in argv[1], each prefixed by its length as a
// uint64, and prints Sampler::greedy's index for each row, one per line.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "engine/sampler.hpp"

int main(int argc, char** argv) {
    if (argc != 2)
        return 2;
    FILE* f = std::fopen(argv[1], "rb");
    if (!f)
        return 2;
    uint64_t n = 0;
    while (std::fread(&n, sizeof n, 1, f) == 1) {
        std::vector<float> row(n);
        if (n && std::fread(row.data(), sizeof(float), n, f) != n)
            return 3;
        std::printf("%lld\n", static_cast<long long>(ovgc::Sampler::greedy(row.data(), n).id));
    }
    std::fclose(f);
    return 0;
}
