// libFuzzer target: opening the profile store (db/store.h) on arbitrary file contents, as every
// tool that is pointed at a store does, then reading everything it holds. Contract checked: a
// file that is not a store, is corrupt, has a newer schema or belongs to another application
// throws StoreError (a hap::Error) and nothing else, on opening or on any read after it.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "db/store.h"
#include "engine/base/error.h"

namespace {

// One file per process, in memory where there is a tmpfs.
std::string scratchPath() {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/hap-fuzz-store-" + std::to_string(getpid()) + ".db";
}

void removeAll(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
}

void readEverything(const hap::db::Store& store) {
  for (const hap::db::ProfileInfo& p : store.profiles()) (void)store.loadProfile(p.name, p.version);
  (void)store.loadProfile("x");
  for (const hap::db::RunRecord& r : store.runs()) {
    (void)store.steps(r.id);
    (void)store.steps(r.id, {0, 1}, 2);
    (void)store.stages(r.id);
    (void)store.plan(r.planId);
  }
  for (int64_t id = 0; id < 3; ++id) {
    (void)store.cluster(id);
    (void)store.plan(id);
    (void)store.run(id);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = scratchPath();
  for (const auto mode : {hap::db::Store::Mode::ReadOnly, hap::db::Store::Mode::ReadWrite}) {
    removeAll(path);
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fwrite(data, 1, size, f);
      std::fclose(f);
    }
    try {
      hap::db::Store store(path, mode);
      readEverything(store);
      if (mode == hap::db::Store::Mode::ReadWrite) (void)store.recoverAbandonedRuns();
    } catch (const hap::Error&) {
      // the documented answer to a file that is not a good store
    }
  }
  removeAll(path);
  return 0;
}
