// Reading and writing a whole text file, with every failure as a hap::Error naming the path.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hap {

// The largest file readTextFile reads unless told otherwise: 256 MiB (a hostile path such as
// /dev/zero ends with an error instead of exhausting memory).
inline constexpr size_t kMaxTextFileBytes = size_t{256} << 20;

// Reads the whole file at `path`. `what` names it in messages ("cluster file", "plan file") and
// `hint` says what to do ("check the path"). Throws hap::Error, never anything else:
//   "PATH: cannot open the WHAT; HINT"              (no such file)
//   "PATH: cannot open the WHAT (REASON); HINT"     (any other reason, e.g. Permission denied)
//   "PATH: is a directory, not a WHAT; HINT"
//   "PATH: cannot read the WHAT (REASON)"
//   "PATH: the WHAT is larger than LIMIT; ..."      (more than maxBytes)
std::string readTextFile(const std::string& path, std::string_view what = "file",
                         std::string_view hint = "check the path",
                         size_t maxBytes = kMaxTextFileBytes);

// Writes `text` to `path` (replacing it). Throws hap::Error "PATH: cannot write (check the
// folder exists)" when the file cannot be written.
void writeTextFile(const std::string& path, std::string_view text);

}  // namespace hap
