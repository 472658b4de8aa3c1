// libFuzzer target: the input specifications (engine/import/input_spec.h), as `hap inspect/plan
// --input ARG` and the model file's hap/inputs.json reach them. The first byte picks the reader:
// even, parseInputArg on the rest; odd, parseInputsJson. Contract checked: bad input throws
// InputSpecError (a hap::Error) and nothing else; a spec that parses has a shape whose element
// count and byte size are representable (no negative or overflowing dimension reaches an
// allocation), and a range only on an integer input with LOW < HIGH.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/error.h"
#include "engine/import/input_spec.h"
#include "engine/ir/dtype.h"

namespace {

void check(const hap::import::InputSpec& s, std::string_view arg) {
  __int128 count = 1;
  for (int64_t d : s.shape) {
    if (d < 0) {
      std::fprintf(stderr, "input '%s' accepted with negative dimension %lld (from '%.*s')\n", s.name.c_str(),
                   static_cast<long long>(d), static_cast<int>(arg.size()), arg.data());
      std::abort();
    }
    count *= d;
    // The tensor's bytes (8 per element at most) must be an int64_t: LibTorch's storage size.
    if (count * 8 > std::numeric_limits<int64_t>::max()) {
      std::fprintf(stderr, "input '%s' accepted with a shape whose size overflows (from '%.*s')\n",
                   s.name.c_str(), static_cast<int>(arg.size()), arg.data());
      std::abort();
    }
  }
  if (s.low && s.high && !(*s.low < *s.high)) {
    std::fprintf(stderr, "input '%s' accepted with an empty range\n", s.name.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if ((data[0] & 1) == 0) {
      const hap::import::InputSpec s = hap::import::parseInputArg(text);
      check(s, text);
      std::vector<hap::import::InputSpec> specs{s};
      hap::import::applyOverrides(specs, {s});
    } else {
      const hap::import::ModelSpec m = hap::import::parseInputsJson(text, "fuzz.pt:hap/inputs.json");
      for (const hap::import::InputSpec& s : m.inputs) check(s, text);
    }
  } catch (const hap::Error&) {
    // the documented answer to bad input
  }
  return 0;
}
