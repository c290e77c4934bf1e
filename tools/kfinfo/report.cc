#include "kfinfo/report.h"

#include <algorithm>

#include "base/config.h"
#include "base/json.h"
#include "kungfu/kungfu.h"

namespace kfinfo {
namespace {

#ifdef KF_HAVE_UCX
constexpr bool kHaveUcx = true;
#else
constexpr bool kHaveUcx = false;
#endif
#ifdef KF_HAVE_HWLOC
constexpr bool kHaveHwloc = true;
#else
constexpr bool kHaveHwloc = false;
#endif
#ifdef KF_HAVE_CUDA
constexpr bool kHaveCuda = true;
#else
constexpr bool kHaveCuda = false;
#endif

std::string version_string(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// Wraps `text` at `width` columns; continuation lines start with `indent` spaces.
std::string wrap(const std::string& text, size_t indent, size_t width) {
  std::string out;
  size_t col = indent;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(pos, end - pos);
    if (col > indent && col + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      col = indent;
    } else if (col > indent) {
      out += " ";
      ++col;
    }
    out += word;
    col += word.size();
    pos = end + 1;
  }
  return out;
}

std::string shown(const std::string& v) { return v.empty() ? "(empty)" : v; }

}  // namespace

Report collect_report() {
  Report r;
  r.header_major = KF_VERSION_MAJOR;
  r.header_minor = KF_VERSION_MINOR;
  r.header_patch = KF_VERSION_PATCH;
  r.header_code = KF_VERSION_CODE;
  r.runtime_code = kf_get_version();
  // The shared-memory transport is not written yet.
  r.features = {{"tcp", true}, {"shm", false}, {"ucx", kHaveUcx}, {"hwloc", kHaveHwloc},
                {"cuda", kHaveCuda}};
  for (size_t i = 0; i < kf::knob_table().size(); ++i) {
    auto k = static_cast<kf::Knob>(i);
    const kf::KnobInfo& info = kf::knob_info(k);
    r.knobs.push_back({info.name, info.default_value, kf::knob_string(k), kf::knob_is_set(k), info.doc});
  }
  return r;
}

std::string format_text(const Report& r) {
  std::string out;
  out += "libkungfu " + version_string(r.runtime_code) + "\n";
  out += "  headers: " + std::to_string(r.header_major) + "." + std::to_string(r.header_minor) + "." +
         std::to_string(r.header_patch) + " (KF_VERSION_CODE " + std::to_string(r.header_code) + ")\n";
  out += "  library: " + version_string(r.runtime_code) + " (kf_get_version() " +
         std::to_string(r.runtime_code) + ")" +
         (r.runtime_code / 10000 != r.header_code / 10000 ? "  ** major version differs from headers **" : "") +
         "\n\n";

  out += "Features:\n";
  size_t fw = 0;
  for (const auto& f : r.features) fw = std::max(fw, f.first.size() + 1);
  for (const auto& [name, on] : r.features) out += "  " + pad(name + ":", fw) + " " + (on ? "yes" : "no") + "\n";

  out += "\nKnobs (environment variables; * = set in the environment):\n";
  size_t nw = 4, dw = 7, vw = 5;
  for (const KnobRow& k : r.knobs) {
    nw = std::max(nw, k.name.size());
    dw = std::max(dw, shown(k.default_value).size());
    vw = std::max(vw, shown(k.value).size() + 2);
  }
  out += "  " + pad("NAME", nw) + "  " + pad("DEFAULT", dw) + "  " + pad("VALUE", vw) + "  DESCRIPTION\n";
  size_t doc_col = 2 + nw + 2 + dw + 2 + vw + 2;
  size_t width = std::max<size_t>(doc_col + 30, 120);
  for (const KnobRow& k : r.knobs) {
    std::string value = shown(k.value) + (k.from_env ? " *" : "");
    out += "  " + pad(k.name, nw) + "  " + pad(shown(k.default_value), dw) + "  " + pad(value, vw) + "  " +
           wrap(k.doc, doc_col, width) + "\n";
  }
  return out;
}

std::string format_json(const Report& r) {
  std::string out = "{\n";
  out += "  \"version\": {\n";
  out += "    \"header\": " +
         kf::json_quote(std::to_string(r.header_major) + "." + std::to_string(r.header_minor) +
                        "." + std::to_string(r.header_patch)) +
         ",\n";
  out += "    \"header_code\": " + std::to_string(r.header_code) + ",\n";
  out += "    \"runtime\": " + kf::json_quote(version_string(r.runtime_code)) + ",\n";
  out += "    \"runtime_code\": " + std::to_string(r.runtime_code) + "\n";
  out += "  },\n";
  out += "  \"features\": {";
  for (size_t i = 0; i < r.features.size(); ++i) {
    out += (i == 0 ? "\n    " : ",\n    ") + kf::json_quote(r.features[i].first) + ": " +
           (r.features[i].second ? "true" : "false");
  }
  out += "\n  },\n";
  out += "  \"knobs\": [";
  for (size_t i = 0; i < r.knobs.size(); ++i) {
    const KnobRow& k = r.knobs[i];
    out += i == 0 ? "\n" : ",\n";
    out += "    {\"name\": " + kf::json_quote(k.name) +
           ", \"default\": " + kf::json_quote(k.default_value) +
           ", \"value\": " + kf::json_quote(k.value) +
           ", \"from_env\": " + (k.from_env ? "true" : "false") +
           ", \"doc\": " + kf::json_quote(k.doc) + "}";
  }
  out += "\n  ]\n}\n";
  return out;
}

}  // namespace kfinfo
