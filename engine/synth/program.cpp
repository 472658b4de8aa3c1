#include "engine/synth/program.h"

#include <fmt/format.h>

#include <cassert>
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
      // A source reached through a form it never held (a parameter stored only as shards and
      // gathered for each use, CostTable::pair) is first loaded in that form, for free.
      const bool load = c->kind == ConversionKind::LoadReplica || c->kind == ConversionKind::LoadShard ||
                        c->kind == ConversionKind::ParamReplicate || c->kind == ConversionKind::ParamSfb;
      if (!load && table.theory().isSource(ins[i]) && !holds(m, c->from)) {
        assert(c->from >= 0 && "only a gathered form is loaded on the way");
        Step shard;
        shard.kind = Step::Kind::Convert;
        shard.node = n.id;
        shard.value = ins[i];
        shard.conversion = Conversion{ConversionKind::LoadShard, kIdentity, c->from};
        p.steps.push_back(shard);
        m = addForm(m, c->from);
      }
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
