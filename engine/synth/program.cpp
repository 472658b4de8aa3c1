#include "engine/synth/program.h"

#include <fmt/format.h>

#include <stdexcept>

namespace hap::synth {

Program buildProgram(const CostTable& table, const std::vector<int>& variantOf) {
  const ir::Graph& g = table.theory().graph();
  Program p;
  p.variantOf = variantOf;
  std::vector<FormMask> forms(g.values.size(), 0);
  for (const ir::Node& n : g.nodes) {
    const int vi = variantOf.at(static_cast<size_t>(n.id));
    const rules::Variant& v = table.theory().variants(n.id).at(static_cast<size_t>(vi));
    const std::vector<ir::ValueId> ins = n.tensorInputs();
    for (size_t i = 0; i < ins.size(); ++i) {
      FormMask& m = forms[static_cast<size_t>(ins[i])];
      if (holds(m, v.inputs[i])) continue;
      std::optional<Conversion> c = table.convert(ins[i], m, v.inputs[i]);
      if (!c)
        throw std::logic_error(fmt::format("buildProgram: {} cannot obtain {} for {}",
                                           g.value(ins[i]).name, formatRel(v.inputs[i]),
                                           g.describe(n.id)));
      Step s;
      s.kind = Step::Kind::Convert;
      s.node = n.id;
      s.value = ins[i];
      s.conversion = *c;
      s.seconds = c->seconds();
      p.seconds += s.seconds;
      p.steps.push_back(s);
      m = addForm(m, c->to);
    }
    Step s;
    s.node = n.id;
    s.variant = vi;
    s.seconds = table.seconds(n.id, vi);
    p.seconds += s.seconds;
    p.steps.push_back(s);
    for (size_t o = 0; o < n.outputs.size(); ++o)
      forms[static_cast<size_t>(n.outputs[o])] = addForm(0, v.outputs[o]);
  }
  return p;
}

}  // namespace hap::synth
