#include "engine/ir/summary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>
#include <utility>

namespace hap::ir {
namespace {

bool isIndex(std::string_view component) {
  return !component.empty() && std::all_of(component.begin(), component.end(),
                                           [](char c) { return c >= '0' && c <= '9'; });
}

// Prints v in the largest unit of `units` (each `base` times the previous) that keeps its
// magnitude at least 1, with three significant digits. Values in the first unit that are whole
// numbers print without decimals.
template <size_t N>
std::string humanize(double v, double base, const std::array<std::string_view, N>& units) {
  const char* sign = v < 0 ? "-" : "";
  double a = std::fabs(v);
  size_t u = 0;
  while (a >= base && u + 1 < N) {
    a /= base;
    ++u;
  }
  if (u == 0 && a == std::floor(a)) return fmt::format("{}{:.0f}{}", sign, a, units[0]);
  int decimals = a < 10 ? 2 : a < 100 ? 1 : 0;
  double scale = std::pow(10.0, decimals);
  if (std::round(a * scale) / scale >= base && u + 1 < N) {  // 999.96K rounds up to 1.00M
    a /= base;
    ++u;
    decimals = 2;
  }
  return fmt::format("{}{:.{}f}{}", sign, a, decimals, units[u]);
}

std::string shortOpName(std::string_view op) {
  constexpr std::string_view kAten = "aten::";
  if (op.starts_with(kAten)) op.remove_prefix(kAten.size());
  return std::string(op);
}

void accumulate(ScopeSummary& into, const ScopeSummary& from) {
  into.parameters += from.parameters;
  into.parameterBytes += from.parameterBytes;
  into.flops += from.flops;
  into.activationBytes += from.activationBytes;
  into.nodes += from.nodes;
  for (const auto& [op, count] : from.opCounts) into.opCounts[op] += count;
}

// "linear×4 relu×2 …": the most frequent op kinds, ties by name.
std::string formatOps(const std::map<std::string, int>& counts) {
  constexpr size_t kShown = 4;
  std::vector<std::pair<std::string, int>> ops(counts.begin(), counts.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (size_t i = 0; i < std::min(kShown, ops.size()); ++i)
    out += fmt::format("{}{}×{}", i ? " " : "", ops[i].first, ops[i].second);
  if (ops.size() > kShown) out += " …";
  return out;
}

// Terminal columns taken by UTF-8 text (one per code point).
size_t displayWidth(std::string_view s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// A fixed-width table; an empty row draws a rule. Lines carry no trailing spaces.
class TextTable {
 public:
  struct Column {
    std::string header;
    bool alignRight;
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {
    std::vector<std::string> header;
    for (const Column& c : columns_) header.push_back(c.header);
    addRow(std::move(header));
    addRule();
  }

  void addRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void addRule() { rows_.emplace_back(); }

  std::string render() const {
    std::vector<size_t> widths(columns_.size(), 0);
    for (const auto& row : rows_)
      for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], displayWidth(row[i]));
    std::string out;
    for (const auto& row : rows_) {
      std::string line;
      for (size_t i = 0; i < columns_.size(); ++i) {
        if (i) line += "  ";
        std::string cell = row.empty() ? std::string(widths[i], '-') : row[i];
        std::string pad(widths[i] - displayWidth(cell), ' ');
        line += columns_[i].alignRight ? pad + cell : cell + pad;
      }
      line.erase(line.find_last_not_of(' ') + 1);
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

std::vector<std::string> tableRow(const ScopeSummary& s, std::string label) {
  return {std::move(label),
          formatCount(static_cast<double>(s.parameters)),
          formatBytes(s.parameterBytes),
          formatCount(s.flops),
          formatBytes(s.activationBytes),
          std::to_string(s.nodes),
          formatOps(s.opCounts)};
}

// "gpt (preset tiny), /models/gpt-tiny.pt" from the model description and the source file.
std::string modelLine(const Graph& g) {
  std::vector<std::string> parts;
  auto info = nlohmann::json::parse(g.modelInfo, nullptr, /*allow_exceptions=*/false);
  if (info.is_object() && info.contains("name") && info["name"].is_string()) {
    std::string name = info["name"].get<std::string>();
    if (info.contains("preset") && info["preset"].is_string())
      name += fmt::format(" (preset {})", info["preset"].get<std::string>());
    parts.push_back(std::move(name));
  }
  if (!g.sourceFile.empty()) parts.push_back(g.sourceFile);
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string typeAndShape(const Value& v) {
  return fmt::format("{} {}", dtypeName(v.dtype), formatShape(v.shape));
}

std::string plural(int64_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

}  // namespace

std::string truncateScope(std::string_view scope, int depth) {
  if (depth < 0) return std::string(scope);
  int kept = 0;
  size_t end = 0;  // length of the kept prefix
  for (size_t start = 0; start < scope.size();) {
    size_t dot = std::min(scope.find('.', start), scope.size());
    // Everything before `start` is kept, so an index here joins its kept parent.
    bool joinsParent = kept > 0 && isIndex(scope.substr(start, dot - start));
    if (!joinsParent) {
      if (kept == depth) break;
      ++kept;
    }
    end = dot;
    start = dot + 1;
  }
  return std::string(scope.substr(0, end));
}

std::string_view ownerScope(std::string_view qualifiedName) {
  size_t dot = qualifiedName.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : qualifiedName.substr(0, dot);
}

GraphSummary summarize(const Graph& g, int depth) {
  GraphSummary s;
  s.depth = depth;
  std::unordered_map<std::string, size_t> rowOf;
  auto row = [&](std::string scope) -> ScopeSummary& {
    auto [it, inserted] = rowOf.try_emplace(scope, s.scopes.size());
    if (inserted) {
      s.scopes.emplace_back();
      s.scopes.back().scope = std::move(scope);
    }
    return s.scopes[it->second];
  };

  for (const Node& n : g.nodes) {
    ScopeSummary& r = row(truncateScope(n.scope, depth));
    r.flops += n.cost.flops;
    r.activationBytes += n.cost.bytesWritten;
    ++r.nodes;
    ++r.opCounts[shortOpName(n.op)];
  }
  for (ValueId id : g.parameters) {
    const Value& p = g.value(id);
    ScopeSummary& r = row(truncateScope(ownerScope(p.name), depth));
    r.parameters += p.numel();
    r.parameterBytes += p.bytes();
  }
  for (const ScopeSummary& r : s.scopes) accumulate(s.total, r);

  for (const Value& v : g.values) {
    switch (v.kind) {
      case ValueKind::Input:
        ++s.inputs;
        s.inputBytes += v.bytes();
        break;
      case ValueKind::Parameter:
        ++s.parameterTensors;
        break;
      case ValueKind::Buffer:
        ++s.buffers;
        s.bufferBytes += v.bytes();
        break;
      case ValueKind::Constant:
        ++s.constants;
        break;
      case ValueKind::Activation:
        ++s.activations;
        break;
    }
  }
  for (const Diagnostic& d : g.diagnostics)
    ++(d.severity == Diagnostic::Severity::Error ? s.errors : s.warnings);
  return s;
}

std::string formatSummaryTable(const Graph& g, const GraphSummary& s) {
  std::string out;
  if (std::string model = modelLine(g); !model.empty()) out += "Model:  " + model + "\n";

  std::vector<std::string> inputs;
  for (ValueId id : g.inputs)
    inputs.push_back(fmt::format("{}: {}", g.value(id).name, typeAndShape(g.value(id))));
  out += fmt::format("Inputs: {}\n",
                     inputs.empty() ? "none" : fmt::format("{}", fmt::join(inputs, ", ")));

  if (g.loss == kNone) {
    out += "Loss:   none\n";
  } else {
    const Value& loss = g.value(g.loss);
    if (loss.producer == kNone)
      out += fmt::format("Loss:   {}: {}\n", loss.name, typeAndShape(loss));
    else
      out += fmt::format("Loss:   {}, produced by {}\n", typeAndShape(loss),
                         g.describe(loss.producer));
  }
  out += fmt::format("Scopes: {}\n\n",
                     s.depth < 0 ? std::string("full depth") : fmt::format("depth {}", s.depth));

  TextTable table({{"scope", false},
                   {"params", true},
                   {"param bytes", true},
                   {"FLOPs", true},
                   {"activations", true},
                   {"nodes", true},
                   {"ops", false}});
  for (const ScopeSummary& r : s.scopes)
    table.addRow(tableRow(r, r.scope.empty() ? "(top)" : r.scope));
  table.addRule();
  table.addRow(tableRow(s.total, "total"));
  out += table.render();

  out += fmt::format("\nValues: {} ({}), {}, {} ({}), {}, {}\n", plural(s.inputs, "input"),
                     formatBytes(s.inputBytes), plural(s.parameterTensors, "parameter tensor"),
                     plural(s.buffers, "buffer"), formatBytes(s.bufferBytes),
                     plural(s.constants, "constant"), plural(s.activations, "activation"));

  if (g.diagnostics.empty()) {
    out += "Diagnostics: none\n";
  } else {
    out += fmt::format("Diagnostics: {}, {}\n", plural(s.errors, "error"),
                       plural(s.warnings, "warning"));
    for (const Diagnostic& d : g.diagnostics) {
      std::string_view severity = d.severity == Diagnostic::Severity::Error ? "error" : "warning";
      if (d.node == kNone)
        out += fmt::format("  {}: {}\n", severity, d.message);
      else
        out += fmt::format("  {}: {}: {}\n", severity, g.describe(d.node), d.message);
    }
  }
  return out;
}

std::string formatCount(double n) {
  static constexpr std::array<std::string_view, 7> kUnits{"", "K", "M", "G", "T", "P", "E"};
  return humanize(n, 1000.0, kUnits);
}

std::string formatBytes(int64_t b) {
  static constexpr std::array<std::string_view, 7> kUnits{" B",   " KiB", " MiB", " GiB",
                                                          " TiB", " PiB", " EiB"};
  return humanize(static_cast<double>(b), 1024.0, kUnits);
}

}  // namespace hap::ir
