// Batch sources: the forward arguments (inputs) of every training iteration, as the pieces one
// rank holds (../shared/DESIGN.md §5, Placeholder-Shard).
//
// Contract shared by every source:
// - Global batch `iteration` is a pure function of (options, iteration): every rank of a run
//   draws pieces of the SAME global batch, so the pieces of all ranks concatenate (along each
//   piece's dim, in rank order) to the batch a single rank would read whole. Tests check this
//   bit for bit.
// - A rank reads or generates what its piece needs, not the whole batch's file data: token and
//   CIFAR files are read with pread, record by record, never loaded whole.
// - Expected failures (missing or truncated file, an input the format cannot feed, an id outside
//   the model's range) throw RuntimeError naming the file, input or field; never a crash later
//   inside an embedding.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/dtype.h"
#include "engine/ir/graph.h"
#include "runtime/data/data_options.h"

namespace hap::runtime {

// One forward argument of the model as this rank needs it: the global batch's tensor (shape,
// dtype) and the part of it this rank holds: whole (dim = -1) or the range
// [offset, offset+length) of `dim` (the plan's exact lengths; length may be 0).
struct InputPiece {
  std::string name;
  ir::DType dtype = ir::DType::Float32;
  ir::Shape shape;  // the global batch's shape
  int dim = -1;
  int64_t offset = 0, length = 0;
  std::optional<int64_t> low, high;  // valid range [low, high) of an integer input (token ids, labels)

  // The shape of this rank's piece: `shape` with shape[dim] = length (the whole shape for dim -1).
  ir::Shape pieceShape() const;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // This rank's pieces of global batch `iteration` (0-based), one per InputPiece in order, each
  // contiguous, with the piece's dtype and pieceShape(). Throws RuntimeError when the data turns
  // out unusable (e.g. a token id outside the model's vocabulary, naming the file and the id).
  virtual std::vector<at::Tensor> batch(int64_t iteration) = 0;
  // One line for logs: "tokens: tokens.bin, 245.7K tokens (uint16), windows of 17".
  virtual std::string describe() const = 0;
  // Bytes read from the data file by batch() so far (0 for synthetic): shows that a rank reads
  // only its piece's rows and columns.
  virtual int64_t bytesRead() const { return 0; }
};

// The source `options` names for `pieces` (the model's forward arguments, in forward order).
//
// synthetic: floats from a standard normal, integers uniform in [low, high) ([0, 2) when
//   unknown), each input from its own generator seeded by (seed, iteration, input name).
// tokens: needs integer [B, S] inputs named x and y. Global batch i holds windows
//   g = i*B .. i*B+B-1 of S+1 consecutive tokens, window g starting at token (g mod W) * S with
//   W = (N-1) div S windows in a file of N tokens (sequential, wrapping; a window never crosses
//   the end); x = window[:S], y = window[1:].
// cifar: needs one floating [B, 3, H, H] image input (H divides 32; 32/H x 32/H average pooling
//   when H < 32) and one integer [B] label input. Global batch i holds records
//   (i*B + r) mod R; pixels are normalised per channel with the usual CIFAR-10 mean and std.
//
// Throws RuntimeError naming the file, input or field: unknown kind or token dtype, a missing
// file, a file whose size does not fit its format, an input the format cannot feed, an
// inconsistent piece (dim or range outside the shape), a token id or label outside the model's
// [low, high) (checked when opened if options.checkWholeFile, and in every batch).
std::unique_ptr<BatchSource> makeBatchSource(const DataOptions& options, std::vector<InputPiece> pieces);

}  // namespace hap::runtime
