// JSON string literals, for every JSON writer of the library (timeline,
// topology dump) and of the tools built beside it (kfinfo, the perf engine).
// Header-only: the perf tools link only the shared library, whose internal
// symbols are hidden, and still use it.
#pragma once

#include <string>
#include <string_view>

namespace kf {

// What json_quote does with the bytes 0x7f and above.
enum class JsonNonAscii {
  // Copied as they are, so UTF-8 text stays readable. Bytes that are not
  // UTF-8 stay as they are too, and a strict parser may reject them.
  kPassThrough,
  // Each byte written as \u00XX: the output is ASCII, valid JSON for any
  // input bytes (a UTF-8 sequence then reads back as one character per byte).
  kEscape,
};

// `text` as a JSON string literal, the quotes included. `"` and `\` get a
// backslash; every control character (below 0x20, newline and tab included)
// is written \u00XX (lower-case hex); bytes from 0x7f up follow `non_ascii`.
// Embedded NUL bytes are written \u0000.
inline std::string json_quote(std::string_view text,
                              JsonNonAscii non_ascii = JsonNonAscii::kPassThrough) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || (c >= 0x7f && non_ascii == JsonNonAscii::kEscape)) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += ch;
    }
  }
  out += '"';
  return out;
}

}  // namespace kf
