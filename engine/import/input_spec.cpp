#include "engine/import/input_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/base/utf8.h"
#include "engine/ir/summary.h"

namespace hap::import {
namespace {

using nlohmann::json;

std::optional<int64_t> parseNonNegative(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::optional<int64_t> parseInteger(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

ir::DType dtypeOrThrow(std::string_view name, const std::string& context) {
  if (auto t = ir::parseDType(name)) return *t;
  throw InputSpecError(fmt::format("{}: unknown dtype '{}' (expected one of {})", context, printableUtf8(name),
                                   ir::dtypeNames()));
}

}  // namespace

void checkInputShape(const ir::Shape& shape, ir::DType dtype, const std::string& context) {
  if (shape.size() > kMaxInputRank)
    throw InputSpecError(fmt::format("{}: {} dimensions; HAP accepts at most {} per input", context,
                                     shape.size(), kMaxInputRank));
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < 0)
      throw InputSpecError(fmt::format("{}: dimension {} is {}; dimensions must be non-negative", context, i,
                                       shape[i]));
  int64_t elements = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(elements, std::max<int64_t>(d, 1), &elements))
      throw InputSpecError(fmt::format("{}: shape {} has more elements than HAP can count (2^63); check the "
                                       "dimensions (at most {} per input)",
                                       context, ir::formatShape(shape), ir::formatBytes(kMaxInputBytes)));
  int64_t bytes = 0;
  if (__builtin_mul_overflow(elements, ir::dtypeSize(dtype), &bytes) || bytes > kMaxInputBytes)
    throw InputSpecError(fmt::format(
        "{}: shape {} is {} as {}, more than HAP accepts for one input ({}); check the dimensions", context,
        ir::formatShape(shape),
        ir::formatBytes(static_cast<int64_t>(
            std::min(static_cast<long double>(elements) * ir::dtypeSize(dtype), 9.2e18L))),
        ir::dtypeName(dtype), ir::formatBytes(kMaxInputBytes)));
}

ModelSpec parseInputsJson(std::string_view text, const std::string& origin) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    throw InputSpecError(fmt::format("{}: not valid JSON ({})", origin, e.what()));
  }
  auto field = [&](const std::string& path) { return fmt::format("{}: field '{}'", origin, path); };
  if (!doc.is_object()) throw InputSpecError(origin + ": expected a JSON object");
  // Typed reads: a wrong JSON type is the same input error as a wrong value.
  if (!doc.contains("format") || !doc["format"].is_string() || doc["format"].get<std::string>() != "hap-inputs")
    throw InputSpecError(field("format") + " must be \"hap-inputs\"");
  if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"].get<int64_t>() != 1)
    throw InputSpecError(field("version") + " must be 1 (this HAP reads version 1)");
  if (!doc.contains("inputs") || !doc["inputs"].is_array())
    throw InputSpecError(field("inputs") + " must be an array of {name, shape, dtype}");

  ModelSpec spec;
  const json& inputs = doc["inputs"];
  for (size_t i = 0; i < inputs.size(); ++i) {
    const json& e = inputs[i];
    std::string at = fmt::format("inputs[{}]", i);
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string())
      throw InputSpecError(field(at + ".name") + " must be a string");
    InputSpec in;
    in.name = e["name"].get<std::string>();
    if (!e.contains("shape") || !e["shape"].is_array())
      throw InputSpecError(field(at + ".shape") + " must be an array of non-negative integers");
    for (const json& d : e["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        throw InputSpecError(field(at + ".shape") + " must be an array of non-negative integers");
      in.shape.push_back(d.get<int64_t>());
    }
    if (!e.contains("dtype") || !e["dtype"].is_string())
      throw InputSpecError(field(at + ".dtype") + " must be a string");
    in.dtype = dtypeOrThrow(e["dtype"].get<std::string>(), field(at + ".dtype"));
    checkInputShape(in.shape, in.dtype, field(at + ".shape"));
    for (auto [key, dst] : {std::pair{"low", &in.low}, std::pair{"high", &in.high}}) {
      if (!e.contains(key)) continue;
      if (!e[key].is_number_integer())
        throw InputSpecError(field(at + "." + key) + " must be an integer");
      *dst = e[key].get<int64_t>();
    }
    if (in.low && in.high && *in.low >= *in.high)
      throw InputSpecError(field(at) + ": low must be less than high");
    spec.inputs.push_back(std::move(in));
  }
  if (doc.contains("model")) spec.modelInfo = doc["model"].dump();
  return spec;
}

InputSpec parseInputArg(std::string_view arg) {
  const std::string context = fmt::format("--input '{}'", printableUtf8(arg));
  auto eq = arg.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw InputSpecError(context + ": expected NAME=DIMxDIMx...[:DTYPE[:LOW..HIGH]], e.g. x=64x3x32x32:float32");
  InputSpec in;
  in.name = std::string(arg.substr(0, eq));
  std::string_view rest = arg.substr(eq + 1);
  auto colon = rest.find(':');
  std::string_view dims = rest.substr(0, colon);
  if (colon == std::string_view::npos) {
    in.dtypeGiven = false;
  } else {
    std::string_view type = rest.substr(colon + 1);
    const auto second = type.find(':');
    in.dtype = dtypeOrThrow(type.substr(0, second), context);
    if (second != std::string_view::npos) {
      // The half-open range of an integer input's values: LOW..HIGH.
      const std::string_view range = type.substr(second + 1);
      const auto dots = range.find("..");
      std::optional<int64_t> low, high;
      if (dots != std::string_view::npos) {
        low = parseInteger(range.substr(0, dots));
        high = parseInteger(range.substr(dots + 2));
      }
      if (!low || !high || *low >= *high)
        throw InputSpecError(fmt::format("{}: range '{}' is not LOW..HIGH with integers LOW < HIGH (the half-open "
                                         "range of valid values, e.g. y=64:int64:0..10)",
                                         context, printableUtf8(range)));
      if (ir::isFloating(in.dtype))
        throw InputSpecError(fmt::format("{}: a range applies to integer inputs only, not {}", context,
                                         ir::dtypeName(in.dtype)));
      in.low = low;
      in.high = high;
    }
  }
  while (!dims.empty()) {
    auto x = dims.find('x');
    std::string_view d = dims.substr(0, x);
    auto v = parseNonNegative(d);
    if (!v)
      throw InputSpecError(
          fmt::format("{}: dimension '{}' is not a non-negative integer", context, printableUtf8(d)));
    in.shape.push_back(*v);
    if (x == std::string_view::npos) break;
    dims.remove_prefix(x + 1);
    if (dims.empty())
      throw InputSpecError(context + ": dimension '' is not a non-negative integer");
  }
  if (!isValidUtf8(in.name))
    throw InputSpecError(fmt::format("{}: the name '{}' is not valid UTF-8", context, printableUtf8(in.name)));
  // At the given dtype; without one, at the smallest element (the importer checks the file's).
  checkInputShape(in.shape, in.dtypeGiven ? in.dtype : ir::DType::UInt8, context);
  return in;
}

void applyOverrides(std::vector<InputSpec>& specs, const std::vector<InputSpec>& overrides) {
  for (const InputSpec& o : overrides) {
    auto it = std::find_if(specs.begin(), specs.end(),
                           [&](const InputSpec& s) { return s.name == o.name; });
    if (it == specs.end()) {
      specs.push_back(o);
      specs.back().dtypeGiven = true;
      continue;
    }
    it->shape = o.shape;
    if (o.dtypeGiven) {
      it->dtype = o.dtype;
      it->low = o.low;
      it->high = o.high;
    }
  }
}

std::vector<InputSpec> dividedBatch(const ir::Graph& g, int divisor) {
  std::vector<InputSpec> out;
  for (ir::ValueId in : g.inputs) {
    const ir::Value& v = g.value(in);
    InputSpec s;
    s.name = v.name;
    s.shape = v.shape;
    s.dtype = v.dtype;
    s.dtypeGiven = false;
    if (!s.shape.empty() && divisor > 1) s.shape[0] = (s.shape[0] + divisor - 1) / divisor;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace hap::import
