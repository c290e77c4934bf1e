// json_quote (base/json.h): every escaping rule of the JSON writers that
// share it (timeline, topology dump, kfinfo, the perf engine).
#include "base/json.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using kf::json_quote;
using kf::JsonNonAscii;

TEST(JsonQuote, PlainTextIsQuoted) {
  EXPECT_EQ(json_quote(""), "\"\"");
  EXPECT_EQ(json_quote("all_reduce.layer3 #0"), "\"all_reduce.layer3 #0\"");
}

TEST(JsonQuote, QuoteAndBackslashGetABackslash) {
  EXPECT_EQ(json_quote("r\"ng"), "\"r\\\"ng\"");
  EXPECT_EQ(json_quote("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(json_quote("\"\\"), "\"\\\"\\\\\"");
}

TEST(JsonQuote, ControlCharactersAreUnicodeEscapes) {
  EXPECT_EQ(json_quote("\n"), "\"\\u000a\"");
  EXPECT_EQ(json_quote("\r"), "\"\\u000d\"");
  EXPECT_EQ(json_quote("tab\there"), "\"tab\\u0009here\"");
  EXPECT_EQ(json_quote("\x01\x1f"), "\"\\u0001\\u001f\"");
  EXPECT_EQ(json_quote(std::string("a\0b", 3)), "\"a\\u0000b\"");
  EXPECT_EQ(json_quote(" "), "\" \"");  // 0x20 is not a control character
}

TEST(JsonQuote, HighBytesPassThroughByDefault) {
  EXPECT_EQ(json_quote("\x7f"), "\"\x7f\"");
  EXPECT_EQ(json_quote("gr\xc3\xbc\xc3\x9f"), "\"gr\xc3\xbc\xc3\x9f\"");  // UTF-8 stays as is
  EXPECT_EQ(json_quote("\xff", JsonNonAscii::kPassThrough), "\"\xff\"");
}

TEST(JsonQuote, HighBytesEscapedOnRequest) {
  EXPECT_EQ(json_quote("\x7f", JsonNonAscii::kEscape), "\"\\u007f\"");
  EXPECT_EQ(json_quote("gr\xc3\xbc", JsonNonAscii::kEscape), "\"gr\\u00c3\\u00bc\"");
  EXPECT_EQ(json_quote("\xff", JsonNonAscii::kEscape), "\"\\u00ff\"");
  // The other rules are the same.
  EXPECT_EQ(json_quote("q\"b\\s\tx~", JsonNonAscii::kEscape), "\"q\\\"b\\\\s\\u0009x~\"");
}

}  // namespace
