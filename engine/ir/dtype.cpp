#include "engine/ir/dtype.h"

#include <array>
#include <utility>

namespace hap::ir {
namespace {

struct Entry {
  DType type;
  std::string_view name;
  int64_t size;
};

constexpr std::array<Entry, 10> kTypes{{
    {DType::Float32, "float32", 4},
    {DType::Float64, "float64", 8},
    {DType::Float16, "float16", 2},
    {DType::BFloat16, "bfloat16", 2},
    {DType::Int64, "int64", 8},
    {DType::Int32, "int32", 4},
    {DType::Int16, "int16", 2},
    {DType::Int8, "int8", 1},
    {DType::UInt8, "uint8", 1},
    {DType::Bool, "bool", 1},
}};

constexpr std::array<std::pair<std::string_view, DType>, 5> kAliases{{
    {"float", DType::Float32},
    {"double", DType::Float64},
    {"half", DType::Float16},
    {"long", DType::Int64},
    {"int", DType::Int32},
}};

const Entry& entry(DType t) { return kTypes[static_cast<size_t>(t)]; }

}  // namespace

std::string_view dtypeName(DType t) { return entry(t).name; }
int64_t dtypeSize(DType t) { return entry(t).size; }

bool isFloating(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 ||
         t == DType::BFloat16;
}

std::optional<DType> parseDType(std::string_view name) {
  for (const Entry& e : kTypes)
    if (e.name == name) return e.type;
  for (const auto& [alias, type] : kAliases)
    if (alias == name) return type;
  return std::nullopt;
}

std::string_view dtypeNames() {
  return "float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool";
}

}  // namespace hap::ir
