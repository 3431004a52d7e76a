#include "engine/gguf/gguf_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace ovgc::gguf {

namespace {

enum ValueType : uint32_t {
    kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9,
    kU64 = 10, kI64 = 11, kF64 = 12,
};

// Elements per block and bytes per block of each GGML type (block size 1 for the plain types).
struct TypeLayout {
    uint32_t type;
    const char* name;
    uint64_t block_elements;
    uint64_t block_bytes;
};
constexpr TypeLayout kLayouts[] = {
    {0, "F32", 1, 4},        {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},     {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},   {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},  {15, "Q8_K", 256, 292},   {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},       {27, "I64", 1, 8},        {28, "F64", 1, 8},        {30, "BF16", 1, 2},
};

const TypeLayout* layout_of(uint32_t type) {
    for (const auto& l : kLayouts)
        if (l.type == type)
            return &l;
    return nullptr;
}

// Bounds-checked little-endian reads over the mapped bytes.
class Cursor {
public:
    Cursor(const uint8_t* data, size_t size, const std::string& path) : p_(data), end_(data + size), begin_(data), path_(path) {}

    template <typename T>
    T read() {
        need(sizeof(T));
        T v;
        std::memcpy(&v, p_, sizeof(T));
        p_ += sizeof(T);
        return v;
    }
    std::string read_string() {
        const uint64_t n = read<uint64_t>();
        need(n);
        std::string s(reinterpret_cast<const char*>(p_), static_cast<size_t>(n));
        p_ += n;
        return s;
    }
    size_t position() const { return static_cast<size_t>(p_ - begin_); }
    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error("'" + path_ + "' is not a valid GGUF file: " + what + " (at byte " +
                                 std::to_string(position()) + ")");
    }

private:
    void need(uint64_t n) const {
        if (n > static_cast<uint64_t>(end_ - p_))
            fail("it ends early");
    }
    const uint8_t* p_;
    const uint8_t* end_;
    const uint8_t* begin_;
    const std::string& path_;
};

int64_t read_integer(Cursor& c, uint32_t type) {
    switch (type) {
    case kU8: return c.read<uint8_t>();
    case kI8: return c.read<int8_t>();
    case kU16: return c.read<uint16_t>();
    case kI16: return c.read<int16_t>();
    case kU32: return c.read<uint32_t>();
    case kI32: return c.read<int32_t>();
    case kI64: return c.read<int64_t>();
    case kU64: {
        const uint64_t v = c.read<uint64_t>();
        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            c.fail("an unsigned 64-bit value too large");
        return static_cast<int64_t>(v);
    }
    default: c.fail("value type " + std::to_string(type) + " is not an integer");
    }
}

bool is_integer(uint32_t t) { return t <= kI32 || t == kU64 || t == kI64; }

MetaValue read_value(Cursor& c, uint32_t type) {
    if (is_integer(type))
        return read_integer(c, type);
    switch (type) {
    case kF32: return static_cast<double>(c.read<float>());
    case kF64: return c.read<double>();
    case kBool: return c.read<uint8_t>() != 0;
    case kString: return c.read_string();
    case kArray: {
        const uint32_t elem = c.read<uint32_t>();
        const uint64_t n = c.read<uint64_t>();
        // each element takes at least one byte: a count past the file's end is a corrupt file, not an allocation
        if (n > (1ULL << 40))
            c.fail("an array of " + std::to_string(n) + " elements");
        if (is_integer(elem)) {
            std::vector<int64_t> v;
            v.reserve(static_cast<size_t>(std::min<uint64_t>(n, 1u << 20)));
            for (uint64_t i = 0; i < n; ++i)
                v.push_back(read_integer(c, elem));
            return v;
        }
        if (elem == kF32 || elem == kF64) {
            std::vector<double> v;
            for (uint64_t i = 0; i < n; ++i)
                v.push_back(elem == kF32 ? static_cast<double>(c.read<float>()) : c.read<double>());
            return v;
        }
        if (elem == kBool) {
            std::vector<bool> v;
            for (uint64_t i = 0; i < n; ++i)
                v.push_back(c.read<uint8_t>() != 0);
            return v;
        }
        if (elem == kString) {
            std::vector<std::string> v;
            v.reserve(static_cast<size_t>(std::min<uint64_t>(n, 1u << 20)));
            for (uint64_t i = 0; i < n; ++i)
                v.push_back(c.read_string());
            return v;
        }
        c.fail("an array of value type " + std::to_string(elem));
    }
    default: c.fail("unknown metadata value type " + std::to_string(type));
    }
}

const char* kind_name(const MetaValue& v) {
    static const char* names[] = {"a bool", "an integer", "a float", "a string", "a bool array", "an integer array",
                                  "a float array", "a string array"};
    return names[v.index()];
}

}  // namespace

const char* ggml_type_name(uint32_t type) {
    if (const auto* l = layout_of(type))
        return l->name;
    static thread_local std::string s;
    s = "type " + std::to_string(type);
    return s.c_str();
}

uint64_t TensorInfo::n_elements() const {
    uint64_t n = 1;
    for (auto d : dims)
        n *= d;
    return n;
}

GgufFile::GgufFile(const std::string& path) : path_(path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw std::runtime_error("cannot open GGUF file '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw std::runtime_error("'" + path + "' is not a regular file");
    }
    map_size_ = static_cast<size_t>(st.st_size);
    if (map_size_ < 24) {
        ::close(fd);
        throw std::runtime_error("'" + path + "' is not a GGUF file: " + std::to_string(map_size_) + " bytes");
    }
    map_ = ::mmap(nullptr, map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map_ == MAP_FAILED) {
        map_ = nullptr;
        throw std::runtime_error("cannot map GGUF file '" + path + "': " + std::strerror(errno));
    }
    try {
        const auto* bytes = static_cast<const uint8_t*>(map_);
        Cursor c(bytes, map_size_, path_);
        if (std::memcmp(bytes, "GGUF", 4) != 0)
            throw std::runtime_error("'" + path + "' is not a GGUF file (no GGUF magic)");
        c.read<uint32_t>();
        version_ = c.read<uint32_t>();
        if (version_ != 2 && version_ != 3)
            c.fail("GGUF version " + std::to_string(version_) + " (versions 2 and 3 are read)");
        const uint64_t n_tensors = c.read<uint64_t>();
        const uint64_t n_meta = c.read<uint64_t>();
        if (n_tensors > map_size_ || n_meta > map_size_)
            c.fail("impossible tensor or metadata counts");
        for (uint64_t i = 0; i < n_meta; ++i) {
            std::string key = c.read_string();
            const uint32_t type = c.read<uint32_t>();
            meta_[key] = read_value(c, type);
        }
        tensors_.reserve(static_cast<size_t>(n_tensors));
        for (uint64_t i = 0; i < n_tensors; ++i) {
            TensorInfo t;
            t.name = c.read_string();
            const uint32_t n_dims = c.read<uint32_t>();
            if (n_dims == 0 || n_dims > 4)
                c.fail("tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions");
            for (uint32_t d = 0; d < n_dims; ++d) {
                const uint64_t dim = c.read<uint64_t>();
                if (dim == 0 || dim > (1ULL << 40))
                    c.fail("tensor '" + t.name + "' has a dimension of " + std::to_string(dim));
                t.dims.push_back(dim);
            }
            t.type = c.read<uint32_t>();
            t.offset = c.read<uint64_t>();
            const TypeLayout* l = layout_of(t.type);
            if (!l)
                c.fail("tensor '" + t.name + "' has unknown GGML type " + std::to_string(t.type));
            if (t.dims[0] % l->block_elements != 0)
                c.fail("tensor '" + t.name + "' (" + l->name + ") has a row of " + std::to_string(t.dims[0]) +
                       " elements, not a multiple of its block of " + std::to_string(l->block_elements));
            const uint64_t n = t.n_elements();
            if (n > (1ULL << 40))
                c.fail("tensor '" + t.name + "' is too large");
            t.n_bytes = n / l->block_elements * l->block_bytes;
            if (!tensor_index_.emplace(t.name, tensors_.size()).second)
                c.fail("tensor '" + t.name + "' appears twice");
            tensors_.push_back(std::move(t));
        }
        uint64_t alignment = 32;
        if (auto* a = find("general.alignment")) {
            if (!std::holds_alternative<int64_t>(*a) || std::get<int64_t>(*a) <= 0 ||
                (std::get<int64_t>(*a) & (std::get<int64_t>(*a) - 1)) != 0)
                c.fail("general.alignment is not a power of two");
            alignment = static_cast<uint64_t>(std::get<int64_t>(*a));
        }
        const uint64_t data_start = (c.position() + alignment - 1) / alignment * alignment;
        for (auto& t : tensors_) {
            if (t.offset % alignment != 0)
                c.fail("tensor '" + t.name + "' is not aligned to " + std::to_string(alignment));
            if (data_start > map_size_ || t.offset > map_size_ - data_start ||
                t.n_bytes > map_size_ - data_start - t.offset)
                throw std::runtime_error("'" + path + "' is truncated: tensor '" + t.name + "' ends past the file's " +
                                         std::to_string(map_size_) + " bytes");
            t.data = bytes + data_start + t.offset;
        }
    } catch (...) {
        ::munmap(map_, map_size_);
        map_ = nullptr;
        throw;
    }
}

GgufFile::~GgufFile() {
    if (map_)
        ::munmap(map_, map_size_);
}

const TensorInfo* GgufFile::find_tensor(const std::string& name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const MetaValue* GgufFile::find(const std::string& key) const {
    auto it = meta_.find(key);
    return it == meta_.end() ? nullptr : &it->second;
}

namespace {
template <typename T>
const T& typed(const GgufFile& f, const std::string& key, const char* want) {
    const MetaValue* v = f.find(key);
    if (!v)
        throw std::runtime_error("GGUF file '" + f.path() + "' lacks the metadata key '" + key + "'");
    if (!std::holds_alternative<T>(*v))
        throw std::runtime_error("GGUF metadata '" + key + "' in '" + f.path() + "' is " + kind_name(*v) + ", not " +
                                 want);
    return std::get<T>(*v);
}
}  // namespace

int64_t GgufFile::get_int(const std::string& key) const { return typed<int64_t>(*this, key, "an integer"); }
int64_t GgufFile::get_int_or(const std::string& key, int64_t fallback) const {
    return has(key) ? get_int(key) : fallback;
}
double GgufFile::get_float(const std::string& key) const {
    const MetaValue* v = find(key);
    if (v && std::holds_alternative<int64_t>(*v))
        return static_cast<double>(std::get<int64_t>(*v));
    return typed<double>(*this, key, "a float");
}
double GgufFile::get_float_or(const std::string& key, double fallback) const {
    return has(key) ? get_float(key) : fallback;
}
bool GgufFile::get_bool_or(const std::string& key, bool fallback) const {
    return has(key) ? typed<bool>(*this, key, "a bool") : fallback;
}
std::string GgufFile::get_string(const std::string& key) const { return typed<std::string>(*this, key, "a string"); }
std::string GgufFile::get_string_or(const std::string& key, const std::string& fallback) const {
    return has(key) ? get_string(key) : fallback;
}
const std::vector<std::string>& GgufFile::get_strings(const std::string& key) const {
    return typed<std::vector<std::string>>(*this, key, "a string array");
}
const std::vector<int64_t>& GgufFile::get_ints(const std::string& key) const {
    return typed<std::vector<int64_t>>(*this, key, "an integer array");
}

}  // namespace ovgc::gguf
