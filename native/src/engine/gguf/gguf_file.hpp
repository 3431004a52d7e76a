// A GGUF file read into memory: its metadata (key -> typed value) and its tensors (name, GGML type, shape,
// bytes). Only the reading: what the bytes mean for a model is gguf_weights / gguf_model / gguf_tokenizer's.
//
// Format (version 2 and 3, little endian): magic "GGUF", u32 version, u64 tensor count, u64 metadata count;
// metadata entries (string key, u32 value type, value; arrays: u32 element type, u64 count, elements); tensor infos
// (string name, u32 dims, u64 dims[] innermost first, u32 GGML type, u64 offset into the data section); padding
// to general.alignment (default 32); the data section. Strings are u64 length + bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace ovgc::gguf {

// GGML tensor types this project knows by name (the file may hold others; they are refused where used).
enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    BF16 = 30,
};
const char* ggml_type_name(uint32_t type);  // "Q4_1", ... or "type 17"

// One metadata value. Integers of any width read as int64_t (u64 above INT64_MAX is refused), floats as double,
// arrays by element kind.
using MetaValue = std::variant<bool, int64_t, double, std::string, std::vector<bool>, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>>;

struct TensorInfo {
    std::string name;
    uint32_t type = 0;             // GgmlType value
    std::vector<uint64_t> dims;    // as stored: innermost (contiguous) dimension first
    uint64_t offset = 0;           // into the data section
    uint64_t n_bytes = 0;          // size of its data (from type and dims)
    const uint8_t* data = nullptr; // into the mapped file, valid while the GgufFile lives
    uint64_t n_elements() const;
};

class GgufFile {
public:
    // Maps the file and reads it; throws std::runtime_error naming the file and what is wrong (not a GGUF, an
    // unsupported version, truncated, a tensor past the end, an unknown tensor type, ...).
    explicit GgufFile(const std::string& path);
    ~GgufFile();
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    const std::map<std::string, MetaValue>& metadata() const { return meta_; }
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find_tensor(const std::string& name) const;

    // Typed metadata access. find(): nullptr when absent. The get_* throw std::runtime_error naming the key when it
    // is absent or of another kind; the *_or forms return the fallback when absent (and still throw on a wrong kind).
    const MetaValue* find(const std::string& key) const;
    bool has(const std::string& key) const { return find(key) != nullptr; }
    int64_t get_int(const std::string& key) const;
    int64_t get_int_or(const std::string& key, int64_t fallback) const;
    double get_float(const std::string& key) const;        // an integer value reads as a float too
    double get_float_or(const std::string& key, double fallback) const;
    bool get_bool_or(const std::string& key, bool fallback) const;
    std::string get_string(const std::string& key) const;
    std::string get_string_or(const std::string& key, const std::string& fallback) const;
    const std::vector<std::string>& get_strings(const std::string& key) const;
    const std::vector<int64_t>& get_ints(const std::string& key) const;

private:
    std::string path_;
    uint32_t version_ = 0;
    std::map<std::string, MetaValue> meta_;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, size_t> tensor_index_;
    void* map_ = nullptr;
    size_t map_size_ = 0;
};

}  // namespace ovgc::gguf
