#include "db/schema.h"

#include <array>

#include "db/store.h"

namespace hap::db::schema {
namespace {

// Version 1 (issue 19). Conventions: ids are INTEGER PRIMARY KEY; times are ISO 8601 UTC text;
// figures are REAL in base units (seconds, bytes, FLOPs, bytes/s), NULL standing for NaN (SQLite
// stores a NaN as NULL); per-rank lists are JSON arrays of numbers; `position` keeps the order of
// a list as the engine's record has it, so a profile loads back exactly as it was saved.
constexpr const char* kVersion1 = R"sql(
PRAGMA application_id = 1212239955;  -- schema::kApplicationId ("HAPS")

-- Measured profiles (engine/cost/profile.h): one row per saved version of a name.
CREATE TABLE profile (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  version INTEGER NOT NULL CHECK (version >= 1),
  host TEXT NOT NULL,
  created_at TEXT NOT NULL,
  note TEXT NOT NULL,
  gradient_exposure REAL NOT NULL,
  UNIQUE (name, version)
);

-- A device type's measured figures within one profile version.
CREATE TABLE device_profile (
  id INTEGER PRIMARY KEY,
  profile_id INTEGER NOT NULL REFERENCES profile(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  device_type TEXT NOT NULL,
  description TEXT NOT NULL,
  threads INTEGER NOT NULL,
  memory_bandwidth REAL NOT NULL,
  compute_scale REAL NOT NULL,
  collective_slowdown REAL NOT NULL,
  base_memory REAL NOT NULL,
  memory_scale REAL NOT NULL,
  UNIQUE (profile_id, position)
);

-- One op family's measured forward time in one dtype on one device profile ...
CREATE TABLE op_throughput (
  id INTEGER PRIMARY KEY,
  device_profile_id INTEGER NOT NULL REFERENCES device_profile(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  family TEXT NOT NULL,
  dtype TEXT NOT NULL,
  UNIQUE (device_profile_id, position)
);

-- ... at each measured size (work: FLOPs or bytes moved; strictly increasing per throughput).
CREATE TABLE op_sample (
  op_throughput_id INTEGER NOT NULL REFERENCES op_throughput(id) ON DELETE CASCADE,
  work REAL NOT NULL,
  seconds REAL NOT NULL,
  PRIMARY KEY (op_throughput_id, work)
) WITHOUT ROWID;

-- A collective's fitted latency and bandwidth per algorithm and link class.
CREATE TABLE collective_fit (
  profile_id INTEGER NOT NULL REFERENCES profile(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  collective TEXT NOT NULL,
  algorithm TEXT NOT NULL,
  link_class TEXT NOT NULL CHECK (link_class IN ('intra', 'inter')),
  latency REAL NOT NULL,
  bandwidth REAL NOT NULL,
  ranks INTEGER NOT NULL,
  samples INTEGER NOT NULL,
  relative_residual REAL,
  PRIMARY KEY (profile_id, position)
) WITHOUT ROWID;

-- Cluster inventories, stored once per text.
CREATE TABLE cluster (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  sha256 TEXT NOT NULL UNIQUE,
  yaml TEXT NOT NULL,
  created_at TEXT NOT NULL
);

-- Plan files, stored once per text; cluster_id NULL when the plan names no stored cluster.
CREATE TABLE plan (
  id INTEGER PRIMARY KEY,
  sha256 TEXT NOT NULL UNIQUE,
  model_sha256 TEXT NOT NULL,
  model_path TEXT NOT NULL,
  strategy TEXT NOT NULL,
  cluster_id INTEGER REFERENCES cluster(id),
  predicted_seconds REAL,
  predicted_memory_bytes TEXT NOT NULL,
  predicted_compute_seconds TEXT NOT NULL,
  json TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX plan_by_cluster ON plan(cluster_id);
CREATE INDEX plan_by_model ON plan(model_sha256);

-- Training runs; plan_id NULL when the run names no stored plan; ended_at NULL while running.
CREATE TABLE run (
  id INTEGER PRIMARY KEY,
  plan_id INTEGER REFERENCES plan(id),
  label TEXT NOT NULL,
  settings_json TEXT NOT NULL,
  ranks INTEGER NOT NULL CHECK (ranks >= 0),
  cpu_shares TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'stopped', 'aborted')),
  exit_reason TEXT NOT NULL
);
CREATE INDEX run_by_plan ON run(plan_id);
CREATE INDEX run_by_status ON run(status, host);

-- Every rank's measurements of every optimizer step; a step's ranks are written together.
CREATE TABLE step (
  run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  step INTEGER NOT NULL,
  warmup INTEGER NOT NULL CHECK (warmup IN (0, 1)),
  seconds REAL,
  compute_seconds REAL,
  communication_seconds REAL,
  loss REAL,
  peak_memory_bytes REAL,
  cpu_seconds REAL,
  PRIMARY KEY (run_id, rank, step)
) WITHOUT ROWID;

-- The measured trace's compute/communication split per rank and plan stage.
CREATE TABLE stage (
  run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  stage INTEGER NOT NULL,
  compute_seconds REAL,
  communication_seconds REAL,
  PRIMARY KEY (run_id, rank, stage)
) WITHOUT ROWID;

PRAGMA user_version = 1;
)sql";

constexpr std::array<const char*, 1> kMigrations{kVersion1};
static_assert(kMigrations.size() == Store::kSchemaVersion, "one migration per schema version");

}  // namespace

std::span<const char* const> migrations() { return kMigrations; }

}  // namespace hap::db::schema
