// The rule families. Each file owns the table of ops it handles; registry.cpp lists the
// families explicitly, so every registered op can be found from that one list.
#pragma once

#include <span>

#include "engine/rules/rule.h"

namespace hap::rules {

std::span<const RuleEntry> elementwiseRules();    // elementwise.cpp: unary, binary, where, casts
std::span<const RuleEntry> randomRules();         // random.cpp: dropout and other random ops
// Whether `op` draws random numbers (listed in randomRules(), in-place variants included).
bool isRandomOp(std::string_view op);
// The execution of every variant of random op `op`, the replicate variant included (a replicated
// plan's random op draws the global batch's numbers): DropoutMask for dropout (an element-wise
// mask of the input's shape), RandomDraws for the others; Plain for an op that draws nothing.
Execution randomExecution(std::string_view op);
std::span<const RuleEntry> reductionRules();      // reduction.cpp: sum, mean, amax, ...
std::span<const RuleEntry> normalizationRules();  // normalization.cpp: layer_norm, batch_norm
std::span<const RuleEntry> softmaxRules();        // softmax.cpp: softmax, log_softmax
std::span<const RuleEntry> lossRules();           // loss.cpp: nll_loss, cross_entropy_loss
// The family of a loss op of lossRules(): over class indices (nll, cross-entropy: their mean counts
// the targets that are not ignore_index), over elements (mse, l1, ...), or not a loss.
enum class LossKind { None, Class, Pointwise };
LossKind lossKind(std::string_view op);
std::span<const RuleEntry> embeddingRules();      // embedding.cpp
std::span<const RuleEntry> factoryRules();        // factory.cpp: arange, zeros, full, *_like
std::span<const RuleEntry> shapeRules();          // shape.cpp: views, permutes, cat, split, ...
// Whether `op` is a view-like op of shapeRules() (view, reshape, flatten, squeeze, ...; the
// in-place forms included): its output holds its first input's elements in the same order.
bool isViewOp(std::string_view op);
std::span<const RuleEntry> matmulRules();         // matmul.cpp: linear, matmul, bmm, einsum, ...
std::span<const RuleEntry> convolutionRules();    // convolution.cpp: convolutions and pooling
std::span<const RuleEntry> indexingRules();       // indexing.cpp: topk, one_hot, cumsum, gather
std::span<const RuleEntry> resamplingRules();     // resampling.cpp: upsample, pixel shuffle, pad, roll
std::span<const RuleEntry> activationRules();     // activation.cpp: prelu, glu
std::span<const RuleEntry> recurrentRules();      // recurrent.cpp: rnn_tanh, rnn_relu, gru, lstm
std::span<const RuleEntry> scatterRules();        // scatter.cpp: slice/select/diagonal_scatter
std::span<const RuleEntry> reshardRules();        // reshard.cpp: hap::reshard at segment boundaries

}  // namespace hap::rules
