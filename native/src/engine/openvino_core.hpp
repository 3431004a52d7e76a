// The one ov::Core of the bundled backend (shared by the LLM and Whisper engines), the openvino_tokenizers
// extension loader, the file-system checks used when a model folder is opened and the reading of a YES/NO
// create property.
#pragma once

#include <string>

#include <openvino/openvino.hpp>

namespace ovgc {

ov::Core& core();
// Loads the openvino_tokenizers extension into the shared Core once per path: OPENVINO_TOKENIZERS_PATH_GENAI,
// else beside this library, else the openvino-tokenizers wheel's copy.
void load_tokenizers_extension();
// A symbol exported by that extension library (e.g. its node factory `create_tokenizer_node`), loading the
// extension first; throws std::runtime_error naming the library when the symbol is missing.
void* tokenizers_extension_symbol(const char* name);

bool is_file(const std::string& path);
bool is_dir(const std::string& path);

// A YES/NO property (or environment variable) named `key`: YES, true, True, 1 / NO, false, False, 0; anything else
// throws std::invalid_argument naming it.
bool property_flag(const std::string& key, const std::string& value);

}  // namespace ovgc
