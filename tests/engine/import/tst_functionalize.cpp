// Functionalization of in-place writes through views (engine/import/functionalize.h): the
// fixtures of tests/fixtures/make_fixtures.py import, their graphs hold the scatters, and the
// imported graph, run node by node on real tensors (each in-place node on a copy of its target,
// as the runtime runs it), computes the module's own loss. What cannot be expressed is refused
// with the node, its scope and source line.
#include <ATen/ATen.h>
#include <torch/csrc/jit/runtime/operator.h>
#include <torch/script.h>

#include <QtTest>

#include <unordered_map>

#include "engine/base/error.h"
#include "engine/import/importer.h"
#include "engine/import/model_tensors.h"

using namespace hap;

namespace {

std::string fixture(const char* name) {
  const QString dir = qEnvironmentVariable("HAP_FIXTURE_DIR");
  if (dir.isEmpty()) qFatal("HAP_FIXTURE_DIR is not set (run the test through ctest)");
  return (dir + "/" + name).toStdString();
}

int countOp(const ir::Graph& g, const std::string& op) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(),
                                        [&](const ir::Node& n) { return n.op == op; }));
}

c10::IValue constantValue(const ir::Arg& a) {
  const ir::Constant& c = a.constant;
  if (std::holds_alternative<std::monostate>(c)) return {};
  if (auto* b = std::get_if<bool>(&c)) return *b;
  if (auto* i = std::get_if<int64_t>(&c)) return *i;
  if (auto* d = std::get_if<double>(&c)) return *d;
  if (auto* s = std::get_if<std::string>(&c)) {
    if (a.type.find("Device") != std::string::npos) return c10::Device(*s);
    return *s;
  }
  if (auto* l = std::get_if<std::vector<int64_t>>(&c)) return *l;
  if (auto* l = std::get_if<std::vector<double>>(&c)) return *l;
  c10::List<bool> bools;
  for (bool b : std::get<std::vector<bool>>(c)) bools.push_back(b);
  return bools;
}

// Runs g on real tensors: parameters, buffers and constants from `tensors`, `inputs` in order.
at::Tensor runGraph(const ir::Graph& g, const import::ModelTensors& tensors,
                    const std::vector<at::Tensor>& inputs) {
  std::unordered_map<ir::ValueId, at::Tensor> v;
  for (const auto& [id, t] : tensors.values) v[id] = t;
  for (size_t i = 0; i < g.inputs.size(); ++i) v[g.inputs[i]] = inputs[i];
  for (const ir::Node& n : g.nodes) {
    std::shared_ptr<torch::jit::Operator> op;
    for (const auto& o : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(n.op)))
      if (o->schema().overload_name() == n.overload) op = o;
    if (!op) throw std::runtime_error("no operator " + n.op + "." + n.overload);
    torch::jit::Stack stack;
    for (const ir::Arg& a : n.args) {
      if (a.kind == ir::Arg::Kind::Tensor) {
        stack.push_back(v.at(a.values[0]));
      } else if (a.kind == ir::Arg::Kind::TensorList) {
        if (a.type.find('?') != std::string::npos) {
          c10::List<c10::optional<at::Tensor>> l;
          size_t next = 0;
          for (size_t k = 0; k < a.values.size() + a.noneAt.size(); ++k) {
            if (std::find(a.noneAt.begin(), a.noneAt.end(), static_cast<int>(k)) != a.noneAt.end())
              l.push_back(c10::nullopt);
            else
              l.push_back(v.at(a.values[next++]));
          }
          stack.push_back(l);
        } else {
          c10::List<at::Tensor> l;
          for (ir::ValueId id : a.values) l.push_back(v.at(id));
          stack.push_back(l);
        }
      } else {
        stack.push_back(constantValue(a));
      }
    }
    if (n.inplace) stack[0] = stack[0].toTensor().clone();  // out of place, as the runtime runs it
    op->getOperation()(stack);
    std::vector<at::Tensor> outs;
    for (const c10::IValue& o : stack) {
      if (o.isTensor()) outs.push_back(o.toTensor());
      else if (o.isTensorList())
        for (const at::Tensor& t : o.toTensorVector()) outs.push_back(t);
    }
    if (outs.size() < n.outputs.size()) throw std::runtime_error("too few results of " + n.op);
    for (size_t k = 0; k < n.outputs.size(); ++k) v[n.outputs[k]] = outs[k];
  }
  return v.at(g.loss);
}

// Imports `path` and compares the loss of its graph with the module's on random inputs.
void checkSameLoss(const std::string& path, ir::Graph* out = nullptr) {
  at::NoGradGuard noGrad;
  import::ModelTensors tensors;
  ir::Graph g = import::importModel(path, {}, tensors);
  at::manual_seed(7);
  std::vector<at::Tensor> inputs;
  std::vector<c10::IValue> args;
  for (ir::ValueId id : g.inputs) {
    const ir::Value& in = g.value(id);
    const auto dtype = import::toScalarType(in.dtype);
    inputs.push_back(ir::isFloating(in.dtype)
                         ? at::randn(in.shape, at::TensorOptions().dtype(dtype))
                         : at::randint(in.low.value_or(0), in.high.value_or(2), in.shape,
                                       at::TensorOptions().dtype(dtype)));
    args.push_back(inputs.back().clone());
  }
  torch::jit::Module module = torch::jit::load(path);
  const at::Tensor want = module.forward(args).toTensor();
  const at::Tensor got = runGraph(g, tensors, inputs);
  const double error = (got.to(at::kDouble) - want.to(at::kDouble)).abs().item<double>() /
                       std::max(1e-12, want.to(at::kDouble).abs().item<double>());
  QVERIFY2(error < 1e-5, qPrintable(QString("%1: loss %2, the module's %3 (relative error %4)")
                                        .arg(QString::fromStdString(path))
                                        .arg(got.item<double>())
                                        .arg(want.item<double>())
                                        .arg(error)));
  if (out) *out = std::move(g);
}

}  // namespace

class TstFunctionalize : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // Every kind of write through a view of InplaceViews becomes a scatter, and the graph computes
  // the module's loss.
  void writesThroughViews() {
    ir::Graph g;
    checkSameLoss(fixture("inplace_views.pt"), &g);
    if (QTest::currentTestFailed()) return;
    // b[n:2n].zero_(), h[:, 4:8], transpose -> slice, h[:, 8:16], narrow (a slice of a whole
    // dimension, as x[:, 0] traces, is the tensor itself).
    QCOMPARE(countOp(g, "aten::slice_scatter"), 5);
    // h[:, 0] = ..., g[:, 1], unsqueeze(1)[:, 0, 20] (two).
    QCOMPARE(countOp(g, "aten::select_scatter"), 4);
    QCOMPARE(countOp(g, "aten::diagonal_scatter"), 1);
    // Emitted nodes carry the scope and the source line of the write.
    for (const ir::Node& n : g.nodes)
      if (n.op.ends_with("_scatter")) QVERIFY2(n.loc.known(), qPrintable(QString::fromStdString(n.op)));
    // Real execution gives the same shapes.
    import::ImportOptions real;
    real.execution = import::ImportOptions::Execution::Real;
    const ir::Graph r = import::importModel(fixture("inplace_views.pt"), real);
    QCOMPARE(r.nodes.size(), g.nodes.size());
    for (size_t i = 0; i < r.values.size(); ++i) QCOMPARE(r.values[i].shape, g.values[i].shape);
  }

  // The fixture the importer refused before: relu_ on a view of h, h read afterwards.
  void viewOfAReadTensor() {
    ir::Graph g;
    checkSameLoss(fixture("inplace_view.pt"), &g);
    if (QTest::currentTestFailed()) return;
    QVERIFY(countOp(g, "aten::reshape") >= 1);  // h's new content from the view's
  }

  // torchvision's Swin V2: qkv_bias.clone(), its middle third zeroed, F.linear with it.
  void swinV2() {
    const std::string path = fixture("swin_v2.pt");
    if (!QFile::exists(QString::fromStdString(path))) QSKIP("torchvision was not installed when the fixtures were made");
    ir::Graph g;
    checkSameLoss(path, &g);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(countOp(g, "aten::slice_scatter"), 4);  // one per block
  }

  // Batch norm's num_batches_tracked.add_(1) stays an in-place node on the buffer, which the
  // runtime writes back.
  void bufferWritesStay() {
    const ir::Graph g = import::importModel(fixture("conv_bn.pt"));
    int writes = 0;
    for (const ir::Node& n : g.nodes) {
      if (!n.inplace) continue;
      const ir::Value& old = g.value(g.value(n.outputs[0]).aliasOf);
      QCOMPARE(old.kind, ir::ValueKind::Buffer);
      ++writes;
    }
    QCOMPARE(writes, 1);
    QCOMPARE(countOp(g, "aten::slice_scatter"), 0);
  }

  void refused_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QStringList>("expected");  // fragments of the message, in order
    QTest::newRow("input") << "write_input.pt"
                           << QStringList{"write_input.pt: node", "aten::fill_", ".py:",
                                          "writes in place into input 'x' through a view of it",
                                          "write that op out of place"};
    QTest::newRow("parameter") << "write_param.pt"
                               << QStringList{"write_param.pt: node", "aten::fill_", "top level",
                                              "parameter 'fc.weight' through a view of it (aten::select)"};
  }
  void refused() {
    QFETCH(QString, file);
    QFETCH(QStringList, expected);
    QString message;
    try {
      import::importModel(fixture(file.toUtf8().constData()));
    } catch (const ImportError& e) {
      message = QString::fromStdString(e.what());
    }
    QVERIFY2(!message.isEmpty(), "imported");
    qsizetype at = 0;
    for (const QString& fragment : expected) {
      const qsizetype found = message.indexOf(fragment, at);
      QVERIFY2(found >= 0, qPrintable(QString("'%1' not in order in: %2").arg(fragment, message)));
      at = found + fragment.size();
    }
  }
};

QTEST_GUILESS_MAIN(TstFunctionalize)
#include "tst_functionalize.moc"
