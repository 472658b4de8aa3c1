#include "engine/base/text_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "engine/base/error.h"

namespace hap {

std::string readTextFile(const std::string& path, std::string_view what, std::string_view hint,
                         size_t maxBytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(fmt::format("{}: is a directory, not a {}; {}", path, what, hint));
  errno = 0;
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) {
    const int error = errno;
    if (error == ENOENT || error == 0)
      throw Error(fmt::format("{}: cannot open the {}; {}", path, what, hint));
    throw Error(fmt::format("{}: cannot open the {} ({}); {}", path, what, std::strerror(error), hint));
  }
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    if (n > maxBytes - text.size())
      throw Error(fmt::format("{}: the {} is larger than {} MiB; check that it is the file you meant",
                              path, what, maxBytes >> 20));
    text.append(buffer, n);
    if (n < sizeof buffer) break;
  }
  if (std::ferror(file.get())) {
    // EISDIR when a directory slipped past the check above (e.g. created meanwhile).
    const int error = errno;
    if (error == EISDIR) throw Error(fmt::format("{}: is a directory, not a {}; {}", path, what, hint));
    throw Error(fmt::format("{}: cannot read the {} ({})", path, what,
                            std::strerror(error ? error : EIO)));
  }
  return text;
}

void writeTextFile(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out.good()) throw Error(fmt::format("{}: cannot write (check the folder exists)", path));
}

}  // namespace hap
