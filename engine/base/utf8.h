// UTF-8 validation of strings read from files and command lines, before they are stored, shown or
// written as JSON (nlohmann::json throws on invalid UTF-8 when it dumps).
//
// Contract: isValidUtf8 accepts exactly the well-formed UTF-8 of RFC 3629 (no overlong forms, no
// surrogates, nothing above U+10FFFF); printableUtf8 never returns invalid UTF-8, so a message
// that quotes a hostile string stays printable and serialisable.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hap {

// True when `text` is well-formed UTF-8.
bool isValidUtf8(std::string_view text);

// The byte offset of the first byte that is not part of a well-formed UTF-8 sequence, or
// std::string_view::npos when there is none.
size_t firstInvalidUtf8(std::string_view text);

// `text` with every byte that is not part of a well-formed UTF-8 sequence written as "\xNN"
// (hexadecimal), for quoting hostile strings in messages.
std::string printableUtf8(std::string_view text);

}  // namespace hap
