#include "engine/base/text_file.h"

#include <fmt/format.h>

#include <fstream>

#include "engine/base/error.h"

namespace hap {

void writeTextFile(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out.good()) throw Error(fmt::format("{}: cannot write (check the folder exists)", path));
}

}  // namespace hap
