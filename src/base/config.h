// The configuration table: every KF_* knob with its default and doc string
// (declared once, in knobs.def). Values come from the environment, read when
// asked for, so tests may change them between communicators.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kf {

enum class Knob {
#define KF_KNOB(name, def, doc) name,
#include "base/knobs.def"
#undef KF_KNOB
  kCount
};

struct KnobInfo {
  const char* name;
  const char* default_value;
  const char* doc;
};

// All knobs, in declaration order.
const std::vector<KnobInfo>& knob_table();
const KnobInfo& knob_info(Knob k);

// The knob's value: the environment variable if set and not empty, else the default.
std::string knob_string(Knob k);
// True when the environment sets the knob (to anything but "").
bool knob_is_set(Knob k);
// The knob parsed as an integer; its default (with a warning) if it does not parse.
int64_t knob_int(Knob k);
// For a size or count knob whose values of 0 and below mean "the default":
// knob_int(k) if positive, else the default of knobs.def (so the default is
// written there only).
uint64_t knob_positive(Knob k);

}  // namespace kf
