// Element types of tensors in the IR, with their canonical names and sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hap::ir {

enum class DType : uint8_t {
  Float32, Float64, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt8, Bool,
};

// Canonical name ("float32", "int64", ...), as used in input specs, plans and reports.
std::string_view dtypeName(DType t);
// Parses a canonical name or a common alias (float, double, half, long, int); nullopt otherwise.
std::optional<DType> parseDType(std::string_view name);
// Size of one element in bytes (Bool is one byte, as in PyTorch).
int64_t dtypeSize(DType t);
bool isFloating(DType t);
// The comma-separated list of canonical names, for error messages.
std::string_view dtypeNames();

}  // namespace hap::ir
