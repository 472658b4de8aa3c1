// Where a worker's batches come from (hap-worker --data, --data-path, --token-dtype; the batch
// sources of data.h read them). Plain C++: no LibTorch, so that the launch library and the app
// fill it (runtime/launch/worker_options.h).
#pragma once

#include <cstdint>
#include <string>

namespace hap::runtime {

struct DataOptions {
  // "synthetic" (seeded random batches), "tokens" (a token file), "cifar" (CIFAR-10 binary).
  std::string kind = "synthetic";
  // tokens: a .bin of little-endian uint16 or int32 ids (resources/data/make_samples.py writes
  // them); cifar: one data_batch_*.bin (records of 1 label byte + 3072 pixel bytes).
  std::string path;
  std::string tokenDtype = "uint16";  // tokens: "uint16" or "int32"
  // synthetic: the seed of every batch. The file sources are sequential and ignore it.
  uint64_t seed = 0;
  // tokens, cifar: read the whole file once when the source is made (in 1 MiB chunks) and reject
  // an id or label outside the model's range there, rather than at the batch that reaches it.
  // Every batch is checked either way.
  bool checkWholeFile = true;

  bool operator==(const DataOptions&) const = default;
};

}  // namespace hap::runtime
