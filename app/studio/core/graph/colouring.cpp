#include "app/studio/core/graph/colouring.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "engine/ir/summary.h"

namespace hap::studio {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Light fills with good mutual contrast (pastel versions of Tableau 10), dark text on all.
const std::array<QColor, 10>& qualitativePalette() {
  static const std::array<QColor, 10> palette = {
      QColor(0xa8c8f0), QColor(0xffc99a), QColor(0xb5dfa8), QColor(0xf4a6a6), QColor(0xd7bde2),
      QColor(0xd9c2ae), QColor(0xf9c4d8), QColor(0xc9d3df), QColor(0xdfe3a0), QColor(0xa6e1ec)};
  return palette;
}

QColor paletteColour(int i) {
  const auto& p = qualitativePalette();
  QColor c = p[static_cast<size_t>(i) % p.size()];
  // Past the first round, shade so neighbours stay distinguishable.
  for (int round = i / static_cast<int>(p.size()); round > 0; --round) c = c.darker(115);
  return c;
}

std::string_view baseOpName(std::string_view op) {
  if (auto colons = op.rfind("::"); colons != std::string_view::npos) op.remove_prefix(colons + 2);
  while (!op.empty() && op.front() == '_') op.remove_prefix(1);
  while (!op.empty() && op.back() == '_') op.remove_suffix(1);
  return op;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

bool inList(std::string_view s, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

QString formatValue(double v, ValueUnit unit) {
  switch (unit) {
    case ValueUnit::Bytes:
      return QString::fromStdString(ir::formatBytes(static_cast<int64_t>(std::llround(v))));
    case ValueUnit::Seconds: {
      const double a = std::abs(v);
      if (a < 1e-6) return QStringLiteral("%1 ns").arg(v * 1e9, 0, 'g', 3);
      if (a < 1e-3) return QStringLiteral("%1 µs").arg(v * 1e6, 0, 'g', 3);
      if (a < 1) return QStringLiteral("%1 ms").arg(v * 1e3, 0, 'g', 3);
      return QStringLiteral("%1 s").arg(v, 0, 'g', 3);
    }
    case ValueUnit::Count: break;
  }
  return QString::fromStdString(ir::formatCount(v));
}

}  // namespace

QString colourByName(ColourBy mode) {
  switch (mode) {
    case ColourBy::OpFamily: return QStringLiteral("Op family");
    case ColourBy::Scope: return QStringLiteral("Module scope");
    case ColourBy::Flops: return QStringLiteral("FLOPs");
    case ColourBy::Bytes: return QStringLiteral("Bytes written");
    case ColourBy::ShardingForm: return QStringLiteral("Sharding form");
    case ColourBy::Variant: return QStringLiteral("Rule variant");
    case ColourBy::Segment: return QStringLiteral("Segment");
    case ColourBy::DeviceCost: return QStringLiteral("Device cost");
  }
  return {};
}

bool colourByNeedsPlan(ColourBy mode) {
  return mode == ColourBy::ShardingForm || mode == ColourBy::Variant || mode == ColourBy::Segment ||
         mode == ColourBy::DeviceCost;
}

OpFamily opFamily(std::string_view op) {
  const std::string_view n = baseOpName(op);
  if (n.empty()) return OpFamily::Other;
  if (inList(n, {"linear", "matmul", "mm", "bmm", "addmm", "addmv", "addbmm", "baddbmm", "mv",
                 "dot", "vdot", "outer", "ger", "einsum", "tensordot", "bilinear", "chain_matmul",
                 "linalg_matmul", "addmm_activation"}))
    return OpFamily::MatMul;
  if (contains(n, "attention") || inList(n, {"softmax", "log_softmax", "softmin"}))
    return OpFamily::Attention;
  if (contains(n, "loss") || inList(n, {"cross_entropy", "nll", "binary_cross_entropy",
                                        "binary_cross_entropy_with_logits", "kl_div"}))
    return OpFamily::Loss;
  if (contains(n, "conv") || contains(n, "pool")) return OpFamily::Convolution;
  if (n.ends_with("_norm") || contains(n, "batch_norm") || contains(n, "layer_norm") ||
      contains(n, "group_norm") || contains(n, "instance_norm")) {
    if (!n.starts_with("linalg")) return OpFamily::Normalisation;
  }
  if (n.starts_with("embedding")) return OpFamily::Embedding;
  if (inList(n, {"relu", "relu6", "gelu", "tanh", "sigmoid", "silu", "hardtanh", "hardsigmoid",
                 "hardswish", "leaky_relu", "elu", "selu", "celu", "mish", "softplus",
                 "softsign", "threshold", "glu", "prelu", "rrelu", "logsigmoid", "tanhshrink",
                 "hardshrink", "softshrink"}))
    return OpFamily::Activation;
  if (inList(n, {"sum", "mean", "amax", "amin", "max", "min", "prod", "std", "var", "std_mean",
                 "var_mean", "norm", "linalg_vector_norm", "linalg_norm", "logsumexp", "argmax",
                 "argmin", "all", "any", "nansum", "nanmean", "cumsum", "cumprod", "cummax",
                 "cummin", "count_nonzero", "median", "mode", "aminmax"}))
    return OpFamily::Reduction;
  if (inList(n, {"view", "reshape", "unsafe_view", "permute", "transpose", "t", "flatten",
                 "unflatten", "unsqueeze", "squeeze", "select", "slice", "narrow", "expand",
                 "expand_as", "cat", "concat", "concatenate", "stack", "hstack", "vstack",
                 "split", "split_with_sizes", "chunk", "unbind", "contiguous", "clone", "movedim",
                 "moveaxis", "swapaxes", "swapdims", "repeat", "repeat_interleave", "view_as",
                 "reshape_as", "broadcast_to", "broadcast_tensors", "index_select", "gather",
                 "index", "alias", "numpy_T", "unfold", "roll", "flip", "pad",
                 "constant_pad_nd", "tile", "diagonal", "as_strided", "reshard"}))
    return OpFamily::Shape;
  if (contains(n, "dropout") || contains(n, "bernoulli")) return OpFamily::Elementwise;
  if (inList(n, {"add", "sub", "subtract", "rsub", "mul", "multiply", "div", "divide",
                 "true_divide", "floor_divide", "remainder", "fmod", "neg", "positive", "exp",
                 "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "abs",
                 "sign", "erf", "erfc", "erfinv", "sin", "cos", "tan", "reciprocal", "square",
                 "floor", "ceil", "round", "trunc", "frac", "pow", "clamp", "clamp_min",
                 "clamp_max", "clip", "nan_to_num", "isnan", "isinf", "maximum", "minimum", "eq",
                 "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or",
                 "logical_xor", "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor",
                 "and", "or", "xor", "iand", "ior", "ixor", "where", "masked_fill", "copy",
                 "fill", "zero", "lerp", "addcmul", "addcdiv", "to", "to_copy", "type_as",
                 "detach", "tril", "triu", "scatter", "scatter_add", "index_put", "index_add",
                 "masked_scatter", "masked_select"}))
    return OpFamily::Elementwise;
  return OpFamily::Other;
}

QString opFamilyName(OpFamily family) {
  switch (family) {
    case OpFamily::MatMul: return QStringLiteral("matmul / linear");
    case OpFamily::Convolution: return QStringLiteral("convolution / pooling");
    case OpFamily::Normalisation: return QStringLiteral("normalisation");
    case OpFamily::Activation: return QStringLiteral("activation");
    case OpFamily::Elementwise: return QStringLiteral("elementwise");
    case OpFamily::Reduction: return QStringLiteral("reduction");
    case OpFamily::Shape: return QStringLiteral("shape / view");
    case OpFamily::Embedding: return QStringLiteral("embedding");
    case OpFamily::Loss: return QStringLiteral("loss");
    case OpFamily::Attention: return QStringLiteral("attention / softmax");
    case OpFamily::Other: return QStringLiteral("other");
  }
  return {};
}

QColor opFamilyColour(OpFamily family) {
  switch (family) {
    case OpFamily::MatMul: return QColor(0xa8c8f0);         // blue
    case OpFamily::Convolution: return QColor(0x9fd8d2);    // teal
    case OpFamily::Normalisation: return QColor(0xb5dfa8);  // green
    case OpFamily::Activation: return QColor(0xffc99a);     // orange
    case OpFamily::Elementwise: return QColor(0xf6e4a0);    // yellow
    case OpFamily::Reduction: return QColor(0xd7bde2);      // purple
    case OpFamily::Shape: return QColor(0xdde3ea);          // quiet grey-blue: views are many
    case OpFamily::Embedding: return QColor(0xd9c2ae);      // brown
    case OpFamily::Loss: return QColor(0xf4a6a6);           // red
    case OpFamily::Attention: return QColor(0xf9c4d8);      // pink
    case OpFamily::Other: return QColor(0xf4f4f4);          // near white
  }
  return QColor(0xf4f4f4);
}

NodeColouring::NodeColouring(const ir::Graph& g, const ScopeTree& tree, ColourBy mode)
    : m_mode(mode) {
  const size_t nodes = g.nodes.size();
  m_title = colourByName(mode);
  switch (mode) {
    case ColourBy::OpFamily:
      for (int f = 0; f < kOpFamilyCount; ++f) {
        m_labels.push_back(opFamilyName(static_cast<OpFamily>(f)));
        m_colours.push_back(opFamilyColour(static_cast<OpFamily>(f)));
      }
      m_nodeCategory.resize(nodes);
      for (size_t n = 0; n < nodes; ++n)
        m_nodeCategory[n] = static_cast<int>(opFamily(g.nodes[n].op));
      break;
    case ColourBy::Scope: {
      // Category 0 is the top level itself; then one per child of the root.
      m_labels.push_back(QStringLiteral("(top)"));
      m_colours.push_back(QColor(0xf4f4f4));
      std::vector<int> categoryOfTopScope(static_cast<size_t>(tree.size()), 0);
      if (tree.size() > 0) {
        for (ScopeId child : tree.scope(kRootScope).children) {
          categoryOfTopScope[static_cast<size_t>(child)] = static_cast<int>(m_labels.size());
          m_colours.push_back(paletteColour(static_cast<int>(m_labels.size()) - 1));
          m_labels.push_back(QString::fromStdString(tree.scope(child).label));
        }
      }
      m_nodeCategory.assign(nodes, 0);
      for (size_t n = 0; n < nodes && tree.size() > 0; ++n) {
        ScopeId s = tree.scopeOfNode(static_cast<ir::NodeId>(n));
        while (s > kRootScope && tree.scope(s).parent != kRootScope) s = tree.scope(s).parent;
        m_nodeCategory[n] = s > kRootScope ? categoryOfTopScope[static_cast<size_t>(s)] : 0;
      }
      break;
    }
    case ColourBy::Flops:
    case ColourBy::Bytes:
      m_numeric = true;
      m_unit = mode == ColourBy::Bytes ? ValueUnit::Bytes : ValueUnit::Count;
      m_nodeValue.resize(nodes);
      for (size_t n = 0; n < nodes; ++n) {
        const ir::NodeCost& c = g.nodes[n].cost;
        m_nodeValue[n] = mode == ColourBy::Flops ? c.flops : static_cast<double>(c.bytesWritten);
      }
      break;
    case ColourBy::ShardingForm:
    case ColourBy::Variant:
    case ColourBy::Segment:
    case ColourBy::DeviceCost:
      m_needsPlan = true;
      break;
  }
  aggregate(tree);
}

NodeColouring NodeColouring::fromCategories(const ir::Graph& g, const ScopeTree& tree,
                                            ColourBy mode, QString title,
                                            std::vector<QString> labels,
                                            std::vector<int> nodeCategory,
                                            std::vector<QColor> colours) {
  NodeColouring c;
  c.m_mode = mode;
  c.m_title = std::move(title);
  c.m_labels = std::move(labels);
  c.m_colours = std::move(colours);
  for (size_t i = c.m_colours.size(); i < c.m_labels.size(); ++i)
    c.m_colours.push_back(paletteColour(static_cast<int>(i)));
  c.m_nodeCategory = std::move(nodeCategory);
  c.m_nodeCategory.resize(g.nodes.size(), -1);
  for (int& cat : c.m_nodeCategory)
    if (cat >= static_cast<int>(c.m_labels.size())) cat = -1;
  c.aggregate(tree);
  return c;
}

NodeColouring NodeColouring::fromValues(const ir::Graph& g, const ScopeTree& tree, ColourBy mode,
                                        QString title, std::vector<double> nodeValue,
                                        bool logScale, bool bytes) {
  return fromValues(g, tree, mode, std::move(title), std::move(nodeValue), logScale,
                    bytes ? ValueUnit::Bytes : ValueUnit::Count);
}

NodeColouring NodeColouring::fromValues(const ir::Graph& g, const ScopeTree& tree, ColourBy mode,
                                        QString title, std::vector<double> nodeValue, bool logScale,
                                        ValueUnit unit) {
  NodeColouring c;
  c.m_mode = mode;
  c.m_title = std::move(title);
  c.m_numeric = true;
  c.m_logScale = logScale;
  c.m_unit = unit;
  c.m_nodeValue = std::move(nodeValue);
  c.m_nodeValue.resize(g.nodes.size(), kNaN);
  c.aggregate(tree);
  return c;
}

// Fills the per-scope aggregates and the initial numeric range (over nodes and scopes alike).
void NodeColouring::aggregate(const ScopeTree& tree) {
  const size_t scopes = static_cast<size_t>(tree.size());
  if (m_numeric) {
    m_scopeValue.assign(scopes, kNaN);
    // Children come after their parent in the tree, but visit explicitly to rely on nothing.
    std::vector<ScopeId> order;
    order.reserve(scopes);
    if (scopes > 0) order.push_back(kRootScope);
    for (size_t i = 0; i < order.size(); ++i)
      for (ScopeId c : tree.scope(order[i]).children) order.push_back(c);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const Scope& s = tree.scope(*it);
      double sum = 0;
      bool any = false;
      for (ir::NodeId n : s.nodes) {
        double v = nodeValue(n);
        if (!std::isnan(v)) sum += v, any = true;
      }
      for (ScopeId c : s.children) {
        double v = m_scopeValue[static_cast<size_t>(c)];
        if (!std::isnan(v)) sum += v, any = true;
      }
      m_scopeValue[static_cast<size_t>(*it)] = any ? sum : kNaN;
    }
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    auto take = [&](double v) {
      if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
    };
    for (double v : m_nodeValue) take(v);
    for (size_t s = 1; s < scopes; ++s) take(m_scopeValue[s]);
    if (hi > 0) setRange(lo, hi);
    return;
  }
  if (m_labels.empty()) return;
  // Category counts over each subtree; the dominant one stands for a collapsed scope.
  const size_t k = m_labels.size();
  // Op family: views and reshapes are bookkeeping, so they decide only where nothing else is
  // (an attention block is "matmul", not "shape / view", though it holds more transposes).
  std::vector<std::vector<int>> counts(scopes, std::vector<int>(k, 0));
  const int weight = m_mode == ColourBy::OpFamily ? 1000 : 1;
  auto weightOf = [&](int cat) {
    return m_mode == ColourBy::OpFamily && cat == static_cast<int>(OpFamily::Shape) ? 1 : weight;
  };
  for (size_t n = 0; n < m_nodeCategory.size(); ++n) {
    int cat = m_nodeCategory[n];
    if (cat < 0) continue;
    for (ScopeId s = tree.scopeOfNode(static_cast<ir::NodeId>(n)); s >= 0;
         s = tree.scope(s).parent)
      counts[static_cast<size_t>(s)][static_cast<size_t>(cat)] += weightOf(cat);
  }
  m_scopeCategory.assign(scopes, -1);
  for (size_t s = 0; s < scopes; ++s) {
    const auto& c = counts[s];
    auto best = std::max_element(c.begin(), c.end());
    if (*best > 0) m_scopeCategory[s] = static_cast<int>(best - c.begin());
  }
}

double NodeColouring::nodeValue(ir::NodeId n) const {
  return n >= 0 && static_cast<size_t>(n) < m_nodeValue.size() ? m_nodeValue[static_cast<size_t>(n)]
                                                                : kNaN;
}
double NodeColouring::scopeValue(ScopeId s) const {
  return s >= 0 && static_cast<size_t>(s) < m_scopeValue.size()
             ? m_scopeValue[static_cast<size_t>(s)]
             : kNaN;
}
int NodeColouring::nodeCategory(ir::NodeId n) const {
  return n >= 0 && static_cast<size_t>(n) < m_nodeCategory.size()
             ? m_nodeCategory[static_cast<size_t>(n)]
             : -1;
}
int NodeColouring::scopeCategory(ScopeId s) const {
  return s >= 0 && static_cast<size_t>(s) < m_scopeCategory.size()
             ? m_scopeCategory[static_cast<size_t>(s)]
             : -1;
}

QColor NodeColouring::neutralColour() const { return QColor(0xf4f4f4); }
QColor NodeColouring::inputColour() const { return QColor(0xffffff); }

QColor NodeColouring::colourOfCategory(int c) const {
  if (c < 0 || static_cast<size_t>(c) >= m_colours.size()) return neutralColour();
  return m_colours[static_cast<size_t>(c)];
}

QColor NodeColouring::colourOfValue(double v) const {
  if (std::isnan(v) || v <= 0 || m_max <= 0) return neutralColour();
  double t = 1;
  if (m_max > m_min) {
    t = m_logScale ? (std::log(std::max(v, m_min)) - std::log(m_min)) /
                         (std::log(m_max) - std::log(m_min))
                   : (v - m_min) / (m_max - m_min);
  }
  return rampColour(std::clamp(t, 0.0, 1.0));
}

QColor NodeColouring::nodeColour(ir::NodeId n) const {
  return m_numeric ? colourOfValue(nodeValue(n)) : colourOfCategory(nodeCategory(n));
}

QColor NodeColouring::scopeColour(ScopeId s) const {
  return m_numeric ? colourOfValue(scopeValue(s)) : colourOfCategory(scopeCategory(s));
}

void NodeColouring::setRange(double min, double max) {
  if (m_logScale) min = std::max(min, std::numeric_limits<double>::min());
  m_min = std::min(min, max);
  m_max = max;
}

void NodeColouring::fitRange(const Layout& drawn) {
  if (!m_numeric) return;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const LayoutBox& b : drawn.boxes) {
    double v = b.kind == LayoutBox::Kind::Op               ? nodeValue(b.id)
               : b.kind == LayoutBox::Kind::CollapsedScope ? scopeValue(b.id)
                                                           : kNaN;
    if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (hi > 0) setRange(lo, hi);
}

std::vector<QColor> NodeColouring::rampStops() {
  // ColorBrewer YlOrBr: light yellow for small, dark brown for large.
  return {QColor(0xfff7bc), QColor(0xfee391), QColor(0xfec44f), QColor(0xfe9929),
          QColor(0xec7014), QColor(0xcc4c02), QColor(0x8c2d04)};
}

QColor NodeColouring::rampColour(double t) {
  static const std::vector<QColor> stops = rampStops();
  t = std::clamp(t, 0.0, 1.0) * static_cast<double>(stops.size() - 1);
  const size_t i = std::min(static_cast<size_t>(t), stops.size() - 2);
  const double f = t - static_cast<double>(i);
  const QColor& a = stops[i];
  const QColor& b = stops[i + 1];
  return QColor::fromRgbF(static_cast<float>(a.redF() + (b.redF() - a.redF()) * f),
                          static_cast<float>(a.greenF() + (b.greenF() - a.greenF()) * f),
                          static_cast<float>(a.blueF() + (b.blueF() - a.blueF()) * f));
}

QColor NodeColouring::textColourOn(const QColor& fill) {
  // Relative luminance (sRGB approximation) against a mid threshold.
  const double l = 0.2126 * fill.redF() + 0.7152 * fill.greenF() + 0.0722 * fill.blueF();
  return l < 0.45 ? QColor(Qt::white) : QColor(0x202124);
}

ColourLegend NodeColouring::legendFor(const std::vector<bool>& present) const {
  ColourLegend legend;
  legend.title = m_title;
  if (m_needsPlan) {
    legend.entries.emplace_back(QStringLiteral("open a plan to colour by this"), neutralColour());
    return legend;
  }
  if (m_numeric) {
    if (m_max <= 0) return legend;
    legend.numeric = true;
    legend.min = m_min;
    legend.max = m_max;
    legend.logScale = m_logScale;
    legend.minLabel = formatValue(m_min, m_unit);
    legend.maxLabel = formatValue(m_max, m_unit);
    legend.ramp = rampStops();
    return legend;
  }
  for (size_t c = 0; c < m_labels.size(); ++c)
    if (c < present.size() && present[c]) legend.entries.emplace_back(m_labels[c], m_colours[c]);
  return legend;
}

ColourLegend NodeColouring::legend() const {
  std::vector<bool> present(m_labels.size(), false);
  for (int c : m_nodeCategory)
    if (c >= 0) present[static_cast<size_t>(c)] = true;
  return legendFor(present);
}

ColourLegend NodeColouring::legend(const Layout& drawn) const {
  std::vector<bool> present(m_labels.size(), false);
  for (const LayoutBox& b : drawn.boxes) {
    int c = b.kind == LayoutBox::Kind::Op               ? nodeCategory(b.id)
            : b.kind == LayoutBox::Kind::CollapsedScope ? scopeCategory(b.id)
                                                        : -1;
    if (c >= 0) present[static_cast<size_t>(c)] = true;
  }
  return legendFor(present);
}

}  // namespace hap::studio
