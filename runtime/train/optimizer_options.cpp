#include "runtime/train/optimizer_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "runtime/core/runtime_error.h"

namespace hap::runtime {

OptimizerOptions::Kind parseOptimizerKind(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "sgd") return OptimizerOptions::Kind::Sgd;
  if (lower == "adam") return OptimizerOptions::Kind::Adam;
  if (lower == "adamw") return OptimizerOptions::Kind::AdamW;
  throw RuntimeError(fmt::format("unknown optimizer '{}'; use sgd, adam or adamw", text));
}

std::string_view optimizerKindName(OptimizerOptions::Kind kind) {
  switch (kind) {
    case OptimizerOptions::Kind::Sgd: return "sgd";
    case OptimizerOptions::Kind::Adam: return "adam";
    case OptimizerOptions::Kind::AdamW: return "adamw";
  }
  throw std::logic_error("optimizerKindName: invalid kind");
}

}  // namespace hap::runtime
