#include "engine/openvino_core.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <vector>

namespace ovgc {

namespace {
std::string dirname_of(const std::string& p) {
    auto pos = p.find_last_of('/');
    return pos == std::string::npos ? std::string(".") : p.substr(0, pos);
}

std::string this_library_dir() {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&this_library_dir), &info) && info.dli_fname)
        return dirname_of(info.dli_fname);
    return ".";
}
}  // namespace

bool is_file(const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
bool is_dir(const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

ov::Core& core() {
    static ov::Core c;
    return c;
}

namespace {
// The extension's state: the paths added to the shared Core, and the one the last call resolved to (what
// tokenizers_extension_symbol() looks symbols up in).
std::mutex extension_mutex;
std::set<std::string> extension_loaded;
std::string extension_current;

// load_tokenizers_extension() with extension_mutex held.
void load_tokenizers_extension_locked() {
    std::vector<std::string> candidates;
    std::string tried;
    if (const char* env = std::getenv("OPENVINO_TOKENIZERS_PATH_GENAI"); env && *env) {
        candidates.push_back(env);
    } else {
        const std::string here = this_library_dir();
        candidates.push_back(here + "/libopenvino_tokenizers.so");
        // wheel layout: site-packages/ovgenai_c/_bundled -> site-packages/openvino_tokenizers/lib
        candidates.push_back(here + "/../../openvino_tokenizers/lib/libopenvino_tokenizers.so");
    }
    for (auto& c : candidates) {
        if (extension_loaded.count(c)) {
            extension_current = c;
            return;
        }
        if (!is_file(c)) {
            tried += (tried.empty() ? "" : ", ") + c;
            continue;
        }
        try {
            core().add_extension(c);
        } catch (const std::exception& e) {
            throw std::runtime_error("cannot load the openvino_tokenizers extension '" + c + "': " + e.what());
        }
        extension_loaded.insert(c);
        extension_current = c;
        return;
    }
    // Nothing found this time, but an extension loaded earlier (e.g. through the environment variable)
    // stays registered in the shared Core: reuse it unless the variable now names a missing file.
    if (!extension_loaded.empty() && !(std::getenv("OPENVINO_TOKENIZERS_PATH_GENAI") && *std::getenv("OPENVINO_TOKENIZERS_PATH_GENAI")))
        return;
    throw std::runtime_error(
        "the openvino_tokenizers extension (libopenvino_tokenizers.so) was not found (tried: " + tried +
        "); set OPENVINO_TOKENIZERS_PATH_GENAI to its path (pip package openvino-tokenizers: "
        "openvino_tokenizers/lib/libopenvino_tokenizers.so)");
}
}  // namespace

// Loads the openvino_tokenizers extension into the shared Core once per path.
void load_tokenizers_extension() {
    std::lock_guard<std::mutex> lock(extension_mutex);
    load_tokenizers_extension_locked();
}

void* tokenizers_extension_symbol(const char* name) {
    std::lock_guard<std::mutex> lock(extension_mutex);
    load_tokenizers_extension_locked();
    // The Core already has the library mapped: dlopen only returns (and references) that mapping. The handles are
    // kept for the process's lifetime, as the Core keeps the library.
    static std::map<std::string, void*> handles;
    void*& handle = handles[extension_current];
    if (!handle) {
        handle = ::dlopen(extension_current.c_str(), RTLD_LAZY | RTLD_LOCAL);
        if (!handle) {
            const char* err = ::dlerror();
            throw std::runtime_error("cannot open the openvino_tokenizers extension '" + extension_current +
                                     "': " + (err ? err : "unknown error"));
        }
    }
    ::dlerror();
    void* symbol = ::dlsym(handle, name);
    if (!symbol)
        throw std::runtime_error("the openvino_tokenizers extension '" + extension_current + "' lacks the symbol '" +
                                 name + "' (too old an openvino-tokenizers?)");
    return symbol;
}

bool property_flag(const std::string& key, const std::string& value) {
    if (value == "YES" || value == "true" || value == "True" || value == "1")
        return true;
    if (value == "NO" || value == "false" || value == "False" || value == "0")
        return false;
    throw std::invalid_argument(key + " must be YES or NO, got '" + value + "'");
}

}  // namespace ovgc
