// The knob table (base/config.h): values from the environment, defaults
// from knobs.def.
#include "base/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace kf {
namespace {

// Sets (or, with nullptr, unsets) a knob's variable for one test, and puts
// back what was there.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~EnvVar() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

int64_t default_of(Knob k) {
  return std::stoll(knob_info(k).default_value);
}

TEST(Config, UnsetKnobsTakeTheirDefault) {
  EnvVar v("KF_PARTITION_BYTES", nullptr);
  EXPECT_FALSE(knob_is_set(Knob::KF_PARTITION_BYTES));
  EXPECT_EQ(knob_int(Knob::KF_PARTITION_BYTES), default_of(Knob::KF_PARTITION_BYTES));
  EXPECT_EQ(knob_positive(Knob::KF_PARTITION_BYTES),
            static_cast<uint64_t>(default_of(Knob::KF_PARTITION_BYTES)));
}

TEST(Config, EmptyIsUnset) {
  EnvVar v("KF_CREDIT_BYTES", "");
  EXPECT_FALSE(knob_is_set(Knob::KF_CREDIT_BYTES));
  EXPECT_EQ(knob_string(Knob::KF_CREDIT_BYTES), knob_info(Knob::KF_CREDIT_BYTES).default_value);
}

TEST(Config, ThePositiveValueOfTheEnvironmentWins) {
  EnvVar v("KF_CHUNK_BYTES", "4096");
  EXPECT_TRUE(knob_is_set(Knob::KF_CHUNK_BYTES));
  EXPECT_EQ(knob_int(Knob::KF_CHUNK_BYTES), 4096);
  EXPECT_EQ(knob_positive(Knob::KF_CHUNK_BYTES), 4096u);
}

TEST(Config, ZeroAndNegativeSizesMeanTheDefault) {
  const uint64_t def = static_cast<uint64_t>(default_of(Knob::KF_CREDIT_BYTES));
  ASSERT_GT(def, 0u);
  for (const char* value : {"0", "-5"}) {
    EnvVar v("KF_CREDIT_BYTES", value);
    EXPECT_EQ(knob_int(Knob::KF_CREDIT_BYTES), std::stoll(value));
    EXPECT_EQ(knob_positive(Knob::KF_CREDIT_BYTES), def) << value;
  }
}

TEST(Config, AValueThatDoesNotParseFallsBackToTheDefault) {
  EnvVar v("KF_PARTITION_BYTES", "2MiB");
  EXPECT_EQ(knob_int(Knob::KF_PARTITION_BYTES), default_of(Knob::KF_PARTITION_BYTES));
  EXPECT_EQ(knob_positive(Knob::KF_PARTITION_BYTES),
            static_cast<uint64_t>(default_of(Knob::KF_PARTITION_BYTES)));
}

TEST(Config, EveryKnobIsNamedAndDocumented) {
  ASSERT_EQ(knob_table().size(), static_cast<size_t>(Knob::kCount));
  for (const KnobInfo& k : knob_table()) {
    EXPECT_EQ(std::string(k.name).rfind("KF_", 0), 0u) << k.name;
    EXPECT_NE(k.default_value, nullptr) << k.name;
    EXPECT_GT(std::string(k.doc).size(), 10u) << k.name;
  }
}

}  // namespace
}  // namespace kf
