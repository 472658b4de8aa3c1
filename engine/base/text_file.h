// Writing a whole text file, with the failure as a hap::Error naming the path.
#pragma once

#include <string>
#include <string_view>

namespace hap {

// Writes `text` to `path` (replacing it). Throws hap::Error "PATH: cannot write (check the
// folder exists)" when the file cannot be written.
void writeTextFile(const std::string& path, std::string_view text);

}  // namespace hap
