#pragma once
// UTF-8 encoding for the tokenizer.
#include <string>

namespace mirrorlab {

// Appends code point `cp` (at most U+10FFFF; the caller has checked it) as UTF-8.
void append_utf8(std::string& out, char32_t cp);

}  // namespace mirrorlab
