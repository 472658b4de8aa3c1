// The optimizer a worker trains with (hap-worker --optimizer, --lr, --momentum, --weight-decay,
// --clip-norm; optimizer.h applies it). Plain C++: no LibTorch, so that the launch library and the
// app fill it (runtime/launch/worker_options.h); its two functions are compiled into hap_launch.
#pragma once

#include <string>
#include <string_view>

namespace hap::runtime {

struct OptimizerOptions {
  enum class Kind { Sgd, Adam, AdamW } kind = Kind::Sgd;
  double lr = 0.01;        // learning rate, >= 0
  double momentum = 0.9;   // SGD only; 0 keeps no momentum buffer
  double beta1 = 0.9;      // Adam/AdamW, in [0, 1)
  double beta2 = 0.999;    // Adam/AdamW, in [0, 1)
  double eps = 1e-8;       // Adam/AdamW, >= 0
  double weightDecay = 0;  // SGD/Adam: L2 added to the gradient; AdamW: decoupled decay
  double clipNorm = 0;     // maximal global L2 norm of the gradients; 0: no clipping

  bool operator==(const OptimizerOptions&) const = default;
};

// "sgd", "adam" or "adamw" (any case); RuntimeError naming the text and the choices otherwise.
OptimizerOptions::Kind parseOptimizerKind(std::string_view text);
// The lower-case name parseOptimizerKind reads back.
std::string_view optimizerKindName(OptimizerOptions::Kind kind);

}  // namespace hap::runtime
