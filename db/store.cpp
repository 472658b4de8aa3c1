#include "db/store.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <pwd.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <limits>
#include <thread>
#include <nlohmann/json.hpp>
#include <utility>

#include "db/schema.h"

namespace hap::db {
namespace {

namespace fs = std::filesystem;

constexpr int kBusyTimeoutMs = 10'000;

std::string oneLine(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string nowUtc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string thisHost() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

std::string sha256Hex(std::string_view text) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), md, &len, EVP_sha256(), nullptr);
  std::string hex;
  hex.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

// SQLite keeps a NaN as NULL; figures read back NULL → NaN.
void bindReal(SQLite::Statement& q, int index, double v) {
  if (std::isnan(v))
    q.bind(index);
  else
    q.bind(index, v);
}
double real(const SQLite::Column& c) {
  return c.isNull() ? std::numeric_limits<double>::quiet_NaN() : c.getDouble();
}
std::string text(const SQLite::Column& c) { return c.isNull() ? std::string() : c.getString(); }

std::string toJsonArray(const std::vector<double>& v) { return nlohmann::json(v).dump(); }

}  // namespace

std::string defaultPath() {
  if (const char* db = std::getenv("HAP_DB"); db && *db) return db;
  // XDG: a relative XDG_DATA_HOME is invalid and ignored.
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg == '/')
    return (fs::path(xdg) / "hap" / "profiles.db").string();
  std::string home;
  if (const char* h = std::getenv("HOME"); h && *h)
    home = h;
  else if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir)
    home = pw->pw_dir;
  else
    home = ".";
  return (fs::path(home) / ".local" / "share" / "hap" / "profiles.db").string();
}

std::string_view runStatusName(RunStatus s) {
  switch (s) {
    case RunStatus::Running: return "running";
    case RunStatus::Succeeded: return "succeeded";
    case RunStatus::Failed: return "failed";
    case RunStatus::Stopped: return "stopped";
    case RunStatus::Aborted: return "aborted";
  }
  assert(false && "unknown RunStatus");
  return "running";
}

std::optional<RunStatus> parseRunStatus(std::string_view name) {
  for (RunStatus s : {RunStatus::Running, RunStatus::Succeeded, RunStatus::Failed, RunStatus::Stopped,
                      RunStatus::Aborted})
    if (runStatusName(s) == name) return s;
  return std::nullopt;
}

struct Store::Impl {
  std::string path;
  Mode mode = Mode::ReadWrite;
  std::unique_ptr<SQLite::Database> db;

  // A StoreError for a SQLite failure while doing `what`, one line, naming the file and saying
  // what to do.
  StoreError error(const SQLite::Exception& e, std::string_view what) const {
    const std::string msg = oneLine(e.what());
    switch (e.getErrorCode()) {
      case SQLITE_NOTADB:
        return StoreError(fmt::format("{}: not a HAP profile store (the file is not a SQLite database); pass another "
                                      "--db, or move the file away and a new store is created",
                                      path));
      case SQLITE_CORRUPT:
        return StoreError(fmt::format("{}: the profile store is corrupt ({}: {}); restore it from a backup, or move "
                                      "it away and a new store is created",
                                      path, what, msg));
      case SQLITE_BUSY:
      case SQLITE_LOCKED:
        return StoreError(fmt::format("{}: {}: the store stayed locked by another process for more than {} s; try "
                                      "again when the other hap process has finished",
                                      path, what, kBusyTimeoutMs / 1000));
      case SQLITE_READONLY:
      case SQLITE_PERM:
      case SQLITE_CANTOPEN:
        return StoreError(fmt::format("{}: {}: cannot open or write the store ({}); check the permissions of the "
                                      "file and its folder, or pass another --db",
                                      path, what, msg));
      case SQLITE_FULL:
        return StoreError(fmt::format("{}: {}: the disk is full; free some space and try again", path, what));
      default:
        return StoreError(fmt::format("{}: {}: SQLite error: {}", path, what, msg));
    }
  }

  // Runs f, turning SQLite's exceptions into StoreError.
  template <class F>
  auto guard(std::string_view what, F&& f) const -> decltype(f()) {
    try {
      return f();
    } catch (const SQLite::Exception& e) {
      throw error(e, what);
    }
  }

  void requireWritable(std::string_view what) const {
    if (mode == Mode::ReadOnly)
      throw StoreError(fmt::format("{}: cannot {}: the store was opened read-only", path, what));
  }

  SQLite::Transaction writeTransaction() const {
    // IMMEDIATE takes the write lock at BEGIN, waiting up to the busy timeout; a deferred
    // transaction that upgrades from read to write could fail at once with SQLITE_BUSY.
    return SQLite::Transaction(*db, SQLite::TransactionBehavior::IMMEDIATE);
  }

  bool exists(const char* sql, int64_t id) const {
    SQLite::Statement q(*db, sql);
    q.bind(1, id);
    return q.executeStep();
  }

  void open();
  void migrate();
  int recoverAbandonedRuns();
  RunRecord readRun(SQLite::Statement& q) const;
};

namespace {
constexpr const char* kRunColumns =
    "id, plan_id, label, settings_json, ranks, cpu_shares, host, pid, started_at, ended_at, status, exit_reason";
}  // namespace

void Store::Impl::open() {
  if (path.empty()) throw StoreError("the profile store's path is empty; pass --db PATH or set HAP_DB");
  std::error_code ec;
  const fs::path file(path);
  const bool exists = fs::exists(file, ec);
  if (exists && fs::is_directory(file, ec))
    throw StoreError(fmt::format("{}: is a folder, not a profile store; pass a file name to --db", path));
  fs::path folder = file.parent_path();
  if (folder.empty()) folder = ".";
  if (!exists) {
    if (mode == Mode::ReadOnly)
      throw StoreError(fmt::format("{}: no profile store there (nothing has been recorded yet); record a run with "
                                   "--db, or pass another --db",
                                   path));
    fs::create_directories(folder, ec);
    if (ec)
      throw StoreError(fmt::format("{}: cannot create the folder {} ({}); fix its permissions or pass another --db",
                                   path, folder.string(), ec.message()));
  }
  if (mode == Mode::ReadWrite && access(folder.c_str(), W_OK) != 0)
    throw StoreError(fmt::format("{}: the folder {} is read-only, and SQLite writes its journal beside the store; "
                                 "make the folder writable or pass another --db",
                                 path, folder.string()));

  guard("opening", [&] {
    const int flags = mode == Mode::ReadOnly ? SQLite::OPEN_READONLY : SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE;
    db = std::make_unique<SQLite::Database>(path, flags, kBusyTimeoutMs);
  });
  // SQLite opens a file it may not write read-only without saying so.
  if (mode == Mode::ReadWrite && sqlite3_db_readonly(db->getHandle(), "main") == 1)
    throw StoreError(fmt::format("{}: the file is read-only; make it writable (chmod u+w) or pass another --db", path));

  int version = 0;
  guard("reading the schema", [&] {
    db->exec("PRAGMA foreign_keys = ON");
    // The first read: a file that is not SQLite, or whose header is damaged, fails here.
    const int tables = db->execAndGet("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").getInt();
    const int application = db->execAndGet("PRAGMA application_id").getInt();
    version = db->execAndGet("PRAGMA user_version").getInt();
    if (application != schema::kApplicationId && (application != 0 || version != 0 || tables != 0))
      throw StoreError(fmt::format("{}: not a HAP profile store (a SQLite database of another application: "
                                   "application_id {}, user_version {}, {} table{}); pass another --db",
                                   path, application, version, tables, tables == 1 ? "" : "s"));
    if (version > Store::kSchemaVersion)
      throw StoreError(fmt::format("{}: was written by a newer hap (schema {}, this one reads up to {}); upgrade hap "
                                   "or use another --db",
                                   path, version, Store::kSchemaVersion));
    // user_version is any 32-bit integer in the file's header: a negative one is damage, never a
    // schema to migrate from (it would index the migrations before their start).
    if (version < 0)
      throw StoreError(fmt::format("{}: the profile store is corrupt (schema version {}); restore it from a backup, "
                                   "or move it away and a new store is created",
                                   path, version));
    const std::string check = db->execAndGet("PRAGMA quick_check(1)").getString();
    if (check != "ok")
      throw StoreError(fmt::format("{}: the profile store is corrupt (quick_check: {}); restore it from a backup, or "
                                   "move it away and a new store is created",
                                   path, oneLine(check)));
  });

  if (mode == Mode::ReadOnly) {
    if (version < Store::kSchemaVersion)
      throw StoreError(fmt::format("{}: {}; open it once read-write with this hap (e.g. record a run) to bring it "
                                   "to schema {}",
                                   path,
                                   version == 0 ? std::string("is empty, not yet a profile store")
                                                : fmt::format("has the older schema {}", version),
                                   Store::kSchemaVersion));
    return;
  }
  guard("setting up the store", [&] {
    // WAL: readers never block the writer and a killed writer leaves every committed transaction
    // whole; synchronous=NORMAL keeps that (a power loss may lose the last commits, never
    // consistency) at a fraction of FULL's fsyncs.
    // Switching to WAL needs the exclusive lock, and SQLite does not wait for it (it answers
    // SQLITE_BUSY, or leaves the mode as it was) when several processes open a new store at once:
    // the switch is retried up to the busy timeout.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
    std::string journal;
    for (;;) {
      try {
        journal = db->execAndGet("PRAGMA journal_mode = WAL").getString();
      } catch (const SQLite::Exception& e) {
        if (e.getErrorCode() != SQLITE_BUSY || std::chrono::steady_clock::now() > deadline) throw;
      }
      if (journal == "wal" || std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (journal != "wal")
      throw StoreError(fmt::format("{}: cannot use write-ahead logging (journal mode stays '{}'); put the store on a "
                                   "local file system or pass another --db",
                                   path, journal));
    db->exec("PRAGMA synchronous = NORMAL");
  });
  migrate();
  recoverAbandonedRuns();
}

void Store::Impl::migrate() {
  guard("migrating the schema", [&] {
    const auto scripts = schema::migrations();
    for (;;) {
      // Several processes may open a new store at once: the version is read again under the write
      // lock, and each migration is applied by exactly one of them.
      SQLite::Transaction t = writeTransaction();
      const int version = db->execAndGet("PRAGMA user_version").getInt();
      if (version >= Store::kSchemaVersion) return;
      db->exec(scripts[static_cast<size_t>(version)]);
      assert(db->execAndGet("PRAGMA user_version").getInt() == version + 1 && "a migration sets user_version");
      t.commit();
    }
  });
}

int Store::Impl::recoverAbandonedRuns() {
  requireWritable("recover abandoned runs");
  return guard("recovering abandoned runs", [&] {
    // Most calls find nothing: the candidates are read without the write lock.
    const std::string host = thisHost();
    std::vector<std::pair<int64_t, int64_t>> gone;  // run, pid
    {
      SQLite::Statement q(*db, "SELECT id, pid FROM run WHERE status = 'running' AND host = ?");
      q.bind(1, host);
      while (q.executeStep()) {
        const int64_t pid = q.getColumn(1).getInt64();
        if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
          gone.emplace_back(q.getColumn(0).getInt64(), pid);
      }
    }
    if (gone.empty()) return 0;
    int changed = 0;
    SQLite::Transaction t = writeTransaction();
    SQLite::Statement u(*db,
                        "UPDATE run SET status = 'aborted', ended_at = ?, exit_reason = ? "
                        "WHERE id = ? AND status = 'running'");
    const std::string now = nowUtc();
    for (const auto& [run, pid] : gone) {
      u.bind(1, now);
      u.bind(2, fmt::format("the recording process (pid {}) ended without finishing the run", pid));
      u.bind(3, run);
      changed += u.exec();
      u.reset();
    }
    t.commit();
    return changed;
  });
}

RunRecord Store::Impl::readRun(SQLite::Statement& q) const {
  RunRecord r;
  r.id = q.getColumn(0).getInt64();
  r.planId = q.getColumn(1).isNull() ? 0 : q.getColumn(1).getInt64();
  r.label = text(q.getColumn(2));
  r.settingsJson = text(q.getColumn(3));
  r.ranks = q.getColumn(4).getInt();
  const std::string shares = text(q.getColumn(5));
  const nlohmann::json j = nlohmann::json::parse(shares, nullptr, false);
  if (!j.is_array())
    throw StoreError(fmt::format("{}: run {}: cpu_shares is not a JSON array ('{}'); the store was changed by "
                                 "another program, fix or delete that run",
                                 path, r.id, oneLine(shares)));
  for (const nlohmann::json& v : j) r.cpuShares.push_back(v.is_number() ? v.get<double>() : std::nan(""));
  r.host = text(q.getColumn(6));
  r.pid = q.getColumn(7).getInt64();
  r.startedAt = text(q.getColumn(8));
  r.endedAt = text(q.getColumn(9));
  const std::string status = text(q.getColumn(10));
  const std::optional<RunStatus> s = parseRunStatus(status);
  assert(s && "the schema's CHECK admits the five status names only");
  r.status = s.value_or(RunStatus::Aborted);
  r.exitReason = text(q.getColumn(11));
  return r;
}

Store::Store(const std::string& path, Mode mode) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->mode = mode;
  impl_->open();
}

Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;

const std::string& Store::path() const { return impl_->path; }

// --- profiles ---------------------------------------------------------------------------------

int Store::saveProfile(const cost::Profile& p) {
  Impl& s = *impl_;
  s.requireWritable("save a profile");
  try {
    cost::validate(p, s.path);
  } catch (const cost::ClusterError& e) {
    throw StoreError(e.what());
  }
  return s.guard(fmt::format("saving profile '{}'", p.name), [&] {
    SQLite::Transaction t = s.writeTransaction();
    SQLite::Statement next(*s.db, "SELECT coalesce(max(version), 0) + 1 FROM profile WHERE name = ?");
    next.bind(1, p.name);
    next.executeStep();
    const int version = next.getColumn(0).getInt();

    SQLite::Statement ins(*s.db,
                          "INSERT INTO profile (name, version, host, created_at, note, gradient_exposure) "
                          "VALUES (?, ?, ?, ?, ?, ?)");
    ins.bind(1, p.name);
    ins.bind(2, version);
    ins.bind(3, p.host);
    ins.bind(4, p.createdAt.empty() ? nowUtc() : p.createdAt);
    ins.bind(5, p.note);
    ins.bind(6, p.gradientExposure);
    ins.exec();
    const int64_t profileId = s.db->getLastInsertRowid();

    SQLite::Statement dev(*s.db,
                          "INSERT INTO device_profile (profile_id, position, device_type, description, threads, "
                          "memory_bandwidth, compute_scale, collective_slowdown, base_memory, memory_scale) "
                          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    SQLite::Statement op(*s.db,
                         "INSERT INTO op_throughput (device_profile_id, position, family, dtype) VALUES (?, ?, ?, ?)");
    SQLite::Statement sample(*s.db, "INSERT INTO op_sample (op_throughput_id, work, seconds) VALUES (?, ?, ?)");
    for (size_t i = 0; i < p.devices.size(); ++i) {
      const cost::DeviceProfile& d = p.devices[i];
      dev.bind(1, profileId);
      dev.bind(2, static_cast<int64_t>(i));
      dev.bind(3, d.deviceType);
      dev.bind(4, d.description);
      dev.bind(5, d.threads);
      dev.bind(6, d.memoryBandwidth);
      dev.bind(7, d.computeScale);
      dev.bind(8, d.collectiveSlowdown);
      dev.bind(9, d.baseMemoryBytes);
      dev.bind(10, d.memoryScale);
      dev.exec();
      dev.reset();
      const int64_t deviceId = s.db->getLastInsertRowid();
      for (size_t k = 0; k < d.ops.size(); ++k) {
        const cost::OpThroughput& o = d.ops[k];
        op.bind(1, deviceId);
        op.bind(2, static_cast<int64_t>(k));
        op.bind(3, std::string(cost::opFamilyName(o.family)));
        op.bind(4, std::string(ir::dtypeName(o.dtype)));
        op.exec();
        op.reset();
        const int64_t opId = s.db->getLastInsertRowid();
        for (const cost::OpSample& x : o.samples) {
          sample.bind(1, opId);
          sample.bind(2, x.work);
          sample.bind(3, x.seconds);
          sample.exec();
          sample.reset();
        }
      }
    }

    SQLite::Statement fit(*s.db,
                          "INSERT INTO collective_fit (profile_id, position, collective, algorithm, link_class, "
                          "latency, bandwidth, ranks, samples, relative_residual) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    for (size_t i = 0; i < p.collectives.size(); ++i) {
      const cost::CollectiveFit& f = p.collectives[i];
      fit.bind(1, profileId);
      fit.bind(2, static_cast<int64_t>(i));
      fit.bind(3, std::string(cost::collectiveName(f.collective)));
      fit.bind(4, f.algorithm);
      fit.bind(5, std::string(cost::linkClassName(f.linkClass)));
      fit.bind(6, f.link.latency);
      fit.bind(7, f.link.bandwidth);
      fit.bind(8, f.ranks);
      fit.bind(9, f.samples);
      bindReal(fit, 10, f.relativeResidual);
      fit.exec();
      fit.reset();
    }
    t.commit();
    return version;
  });
}

std::optional<cost::Profile> Store::loadProfile(const std::string& name, int version) const {
  const Impl& s = *impl_;
  std::optional<cost::Profile> loaded = s.guard(fmt::format("loading profile '{}'", name), [&] {
    // One read transaction: a profile saved meanwhile is not seen half.
    SQLite::Transaction t(*s.db, SQLite::TransactionBehavior::DEFERRED);
    SQLite::Statement head(*s.db,
                           version == 0 ? "SELECT id, version, host, created_at, note, gradient_exposure FROM profile "
                                          "WHERE name = ? ORDER BY version DESC LIMIT 1"
                                        : "SELECT id, version, host, created_at, note, gradient_exposure FROM profile "
                                          "WHERE name = ? "
                                          "AND version = ?");
    head.bind(1, name);
    if (version != 0) head.bind(2, version);
    if (!head.executeStep()) return std::optional<cost::Profile>();
    cost::Profile p;
    const int64_t profileId = head.getColumn(0).getInt64();
    p.name = name;
    p.version = head.getColumn(1).getInt();
    p.host = text(head.getColumn(2));
    p.createdAt = text(head.getColumn(3));
    p.note = text(head.getColumn(4));
    p.gradientExposure = real(head.getColumn(5));
    const std::string where = fmt::format("profile '{}' v{}", p.name, p.version);

    SQLite::Statement dev(*s.db,
                          "SELECT id, device_type, description, threads, memory_bandwidth, compute_scale, "
                          "collective_slowdown, base_memory, memory_scale FROM device_profile WHERE profile_id = ? ORDER BY position");
    SQLite::Statement op(*s.db,
                         "SELECT id, family, dtype FROM op_throughput WHERE device_profile_id = ? ORDER BY position");
    SQLite::Statement sample(*s.db, "SELECT work, seconds FROM op_sample WHERE op_throughput_id = ? ORDER BY work");
    dev.bind(1, profileId);
    while (dev.executeStep()) {
      cost::DeviceProfile d;
      d.deviceType = text(dev.getColumn(1));
      d.description = text(dev.getColumn(2));
      d.threads = dev.getColumn(3).getInt();
      d.memoryBandwidth = real(dev.getColumn(4));
      d.computeScale = real(dev.getColumn(5));
      d.collectiveSlowdown = real(dev.getColumn(6));
      d.baseMemoryBytes = real(dev.getColumn(7));
      d.memoryScale = real(dev.getColumn(8));
      op.bind(1, dev.getColumn(0).getInt64());
      while (op.executeStep()) {
        cost::OpThroughput o;
        const std::string family = text(op.getColumn(1)), dtype = text(op.getColumn(2));
        const std::optional<cost::OpFamily> f = cost::parseOpFamily(family);
        const std::optional<ir::DType> dt = ir::parseDType(dtype);
        if (!f || !dt)
          throw StoreError(fmt::format("{}: {}: device {}: unknown op family '{}' or dtype '{}' (written by a newer "
                                       "hap?); upgrade hap or use another profile",
                                       s.path, where, d.deviceType, family, dtype));
        o.family = *f;
        o.dtype = *dt;
        sample.bind(1, op.getColumn(0).getInt64());
        while (sample.executeStep()) o.samples.push_back({real(sample.getColumn(0)), real(sample.getColumn(1))});
        sample.reset();
        d.ops.push_back(std::move(o));
      }
      op.reset();
      p.devices.push_back(std::move(d));
    }

    SQLite::Statement fit(*s.db,
                          "SELECT collective, algorithm, link_class, latency, bandwidth, ranks, samples, "
                          "relative_residual FROM collective_fit WHERE profile_id = ? ORDER BY position");
    fit.bind(1, profileId);
    while (fit.executeStep()) {
      cost::CollectiveFit f;
      const std::string collective = text(fit.getColumn(0)), link = text(fit.getColumn(2));
      std::optional<cost::Collective> c;
      for (int k = 0; k < cost::kCollectiveCount; ++k)
        if (cost::collectiveName(static_cast<cost::Collective>(k)) == collective) c = static_cast<cost::Collective>(k);
      const std::optional<cost::LinkClass> lc = cost::parseLinkClass(link);
      if (!c || !lc)
        throw StoreError(fmt::format("{}: {}: unknown collective '{}' or link class '{}' (written by a newer hap?); "
                                     "upgrade hap or use another profile",
                                     s.path, where, collective, link));
      f.collective = *c;
      f.algorithm = text(fit.getColumn(1));
      f.linkClass = *lc;
      f.link.latency = real(fit.getColumn(3));
      f.link.bandwidth = real(fit.getColumn(4));
      f.ranks = fit.getColumn(5).getInt();
      f.samples = fit.getColumn(6).getInt();
      f.relativeResidual = real(fit.getColumn(7));
      p.collectives.push_back(std::move(f));
    }
    return std::optional<cost::Profile>(std::move(p));
  });
  if (loaded) {
    try {
      cost::validate(*loaded, s.path);
    } catch (const cost::ClusterError& e) {
      throw StoreError(e.what());
    }
  }
  return loaded;
}

std::vector<ProfileInfo> Store::profiles() const {
  const Impl& s = *impl_;
  return s.guard("listing profiles", [&] {
    SQLite::Statement q(*s.db,
                        "SELECT name, version, host, created_at, note, "
                        "(SELECT count(*) FROM device_profile d WHERE d.profile_id = p.id), "
                        "(SELECT count(*) FROM collective_fit c WHERE c.profile_id = p.id) "
                        "FROM profile p ORDER BY id DESC");
    std::vector<ProfileInfo> out;
    while (q.executeStep()) {
      ProfileInfo i;
      i.name = text(q.getColumn(0));
      i.version = q.getColumn(1).getInt();
      i.host = text(q.getColumn(2));
      i.createdAt = text(q.getColumn(3));
      i.note = text(q.getColumn(4));
      i.devices = q.getColumn(5).getInt();
      i.collectives = q.getColumn(6).getInt();
      out.push_back(std::move(i));
    }
    return out;
  });
}

// --- clusters and plans -----------------------------------------------------------------------

int64_t Store::saveCluster(const std::string& name, const std::string& yaml) {
  Impl& s = *impl_;
  s.requireWritable("save a cluster");
  const std::string hash = sha256Hex(yaml);
  return s.guard(fmt::format("saving cluster '{}'", name), [&] {
    SQLite::Transaction t = s.writeTransaction();
    SQLite::Statement ins(*s.db,
                          "INSERT INTO cluster (name, sha256, yaml, created_at) VALUES (?, ?, ?, ?) "
                          "ON CONFLICT (sha256) DO NOTHING");
    ins.bind(1, name);
    ins.bind(2, hash);
    ins.bind(3, yaml);
    ins.bind(4, nowUtc());
    ins.exec();
    SQLite::Statement id(*s.db, "SELECT id FROM cluster WHERE sha256 = ?");
    id.bind(1, hash);
    id.executeStep();
    const int64_t result = id.getColumn(0).getInt64();
    t.commit();
    return result;
  });
}

std::optional<ClusterRecord> Store::cluster(int64_t id) const {
  const Impl& s = *impl_;
  return s.guard("reading a cluster", [&] {
    SQLite::Statement q(*s.db, "SELECT id, name, sha256, yaml FROM cluster WHERE id = ?");
    q.bind(1, id);
    if (!q.executeStep()) return std::optional<ClusterRecord>();
    return std::optional<ClusterRecord>(
        ClusterRecord{q.getColumn(0).getInt64(), text(q.getColumn(1)), text(q.getColumn(2)), text(q.getColumn(3))});
  });
}

int64_t Store::savePlan(const PlanRecord& p) {
  Impl& s = *impl_;
  s.requireWritable("save a plan");
  // The key is the hash of the plan's text, whatever the record says.
  const std::string hash = sha256Hex(p.json);
  return s.guard("saving a plan", [&] {
    SQLite::Transaction t = s.writeTransaction();
    if (p.clusterId != 0 && !s.exists("SELECT 1 FROM cluster WHERE id = ?", p.clusterId))
      throw StoreError(fmt::format("{}: cannot save the plan of model {}: no cluster {} in the store; save the "
                                   "cluster first",
                                   s.path, p.modelPath, p.clusterId));
    SQLite::Statement ins(*s.db,
                          "INSERT INTO plan (sha256, model_sha256, model_path, strategy, cluster_id, "
                          "predicted_seconds, predicted_memory_bytes, predicted_compute_seconds, json, created_at) "
                          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (sha256) DO NOTHING");
    ins.bind(1, hash);
    ins.bind(2, p.modelSha256);
    ins.bind(3, p.modelPath);
    ins.bind(4, p.strategy);
    if (p.clusterId != 0)
      ins.bind(5, p.clusterId);
    else
      ins.bind(5);
    bindReal(ins, 6, p.predictedSeconds);
    ins.bind(7, toJsonArray(p.predictedMemoryBytes));
    ins.bind(8, toJsonArray(p.predictedComputeSeconds));
    ins.bind(9, p.json);
    ins.bind(10, nowUtc());
    ins.exec();
    SQLite::Statement id(*s.db, "SELECT id FROM plan WHERE sha256 = ?");
    id.bind(1, hash);
    id.executeStep();
    const int64_t result = id.getColumn(0).getInt64();
    t.commit();
    return result;
  });
}

std::optional<PlanRecord> Store::plan(int64_t id) const {
  const Impl& s = *impl_;
  return s.guard("reading a plan", [&] {
    SQLite::Statement q(*s.db,
                        "SELECT id, sha256, model_sha256, model_path, strategy, cluster_id, predicted_seconds, "
                        "predicted_memory_bytes, predicted_compute_seconds, json FROM plan WHERE id = ?");
    q.bind(1, id);
    if (!q.executeStep()) return std::optional<PlanRecord>();
    PlanRecord p;
    p.id = q.getColumn(0).getInt64();
    p.sha256 = text(q.getColumn(1));
    p.modelSha256 = text(q.getColumn(2));
    p.modelPath = text(q.getColumn(3));
    p.strategy = text(q.getColumn(4));
    p.clusterId = q.getColumn(5).isNull() ? 0 : q.getColumn(5).getInt64();
    p.predictedSeconds = real(q.getColumn(6));
    for (auto [column, out] : {std::pair{7, &p.predictedMemoryBytes}, std::pair{8, &p.predictedComputeSeconds}}) {
      const std::string array = text(q.getColumn(column));
      const nlohmann::json j = nlohmann::json::parse(array, nullptr, false);
      if (!j.is_array())
        throw StoreError(fmt::format("{}: plan {}: a per-rank figure is not a JSON array ('{}'); the store was "
                                     "changed by another program, fix or delete that plan",
                                     s.path, p.id, oneLine(array)));
      for (const nlohmann::json& v : j) out->push_back(v.is_number() ? v.get<double>() : std::nan(""));
    }
    p.json = text(q.getColumn(9));
    return std::optional<PlanRecord>(std::move(p));
  });
}

// --- runs -------------------------------------------------------------------------------------

int64_t Store::beginRun(const RunRecord& r) {
  Impl& s = *impl_;
  s.requireWritable("begin a run");
  return s.guard("beginning a run", [&] {
    SQLite::Transaction t = s.writeTransaction();
    if (r.planId != 0 && !s.exists("SELECT 1 FROM plan WHERE id = ?", r.planId))
      throw StoreError(fmt::format("{}: cannot record run '{}': no plan {} in the store; save the plan first", s.path,
                                   r.label, r.planId));
    SQLite::Statement ins(*s.db,
                          "INSERT INTO run (plan_id, label, settings_json, ranks, cpu_shares, host, pid, started_at, "
                          "ended_at, status, exit_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, 'running', '')");
    if (r.planId != 0)
      ins.bind(1, r.planId);
    else
      ins.bind(1);
    ins.bind(2, r.label);
    ins.bind(3, r.settingsJson);
    ins.bind(4, r.ranks);
    ins.bind(5, toJsonArray(r.cpuShares));
    // The recording process defaults to this one, so that recoverAbandonedRuns can judge it.
    ins.bind(6, r.host.empty() ? thisHost() : r.host);
    ins.bind(7, r.pid != 0 ? r.pid : static_cast<int64_t>(getpid()));
    ins.bind(8, r.startedAt.empty() ? nowUtc() : r.startedAt);
    ins.exec();
    const int64_t id = s.db->getLastInsertRowid();
    t.commit();
    return id;
  });
}

void Store::recordSteps(int64_t run, const std::vector<StepRecord>& steps) {
  Impl& s = *impl_;
  s.requireWritable("record steps");
  s.guard(fmt::format("recording steps of run {}", run), [&] {
    SQLite::Transaction t = s.writeTransaction();
    if (!s.exists("SELECT 1 FROM run WHERE id = ?", run))
      throw StoreError(fmt::format("{}: cannot record steps: no run {} in the store; begin the run first", s.path, run));
    SQLite::Statement ins(*s.db,
                          "INSERT INTO step (run_id, rank, step, warmup, seconds, compute_seconds, "
                          "communication_seconds, loss, peak_memory_bytes, cpu_seconds) "
                          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    for (const StepRecord& x : steps) {
      ins.bind(1, run);
      ins.bind(2, x.rank);
      ins.bind(3, x.step);
      ins.bind(4, x.warmup ? 1 : 0);
      bindReal(ins, 5, x.seconds);
      bindReal(ins, 6, x.computeSeconds);
      bindReal(ins, 7, x.communicationSeconds);
      bindReal(ins, 8, x.loss);
      bindReal(ins, 9, x.peakMemoryBytes);
      bindReal(ins, 10, x.cpuSeconds);
      try {
        ins.exec();
      } catch (const SQLite::Exception& e) {
        if (e.getErrorCode() != SQLITE_CONSTRAINT) throw;
        throw StoreError(fmt::format("{}: run {}: rank {} step {} is already recorded; record each step once", s.path,
                                     run, x.rank, x.step));
      }
      ins.reset();
    }
    t.commit();
  });
}

void Store::recordStages(int64_t run, const std::vector<StageRecord>& stages) {
  Impl& s = *impl_;
  s.requireWritable("record stages");
  s.guard(fmt::format("recording stages of run {}", run), [&] {
    SQLite::Transaction t = s.writeTransaction();
    if (!s.exists("SELECT 1 FROM run WHERE id = ?", run))
      throw StoreError(fmt::format("{}: cannot record stages: no run {} in the store; begin the run first", s.path, run));
    SQLite::Statement ins(*s.db,
                          "INSERT INTO stage (run_id, rank, stage, compute_seconds, communication_seconds) "
                          "VALUES (?, ?, ?, ?, ?)");
    for (const StageRecord& x : stages) {
      ins.bind(1, run);
      ins.bind(2, x.rank);
      ins.bind(3, x.stage);
      bindReal(ins, 4, x.computeSeconds);
      bindReal(ins, 5, x.communicationSeconds);
      try {
        ins.exec();
      } catch (const SQLite::Exception& e) {
        if (e.getErrorCode() != SQLITE_CONSTRAINT) throw;
        throw StoreError(fmt::format("{}: run {}: rank {} stage {} is already recorded; record each stage once", s.path,
                                     run, x.rank, x.stage));
      }
      ins.reset();
    }
    t.commit();
  });
}

void Store::finishRun(int64_t run, RunStatus status, const std::string& exitReason,
                      const std::string& endedAt) {
  assert(status != RunStatus::Running && "finishRun ends a run");
  Impl& s = *impl_;
  s.requireWritable("finish a run");
  s.guard(fmt::format("finishing run {}", run), [&] {
    SQLite::Transaction t = s.writeTransaction();
    SQLite::Statement u(*s.db, "UPDATE run SET status = ?, ended_at = ?, exit_reason = ? WHERE id = ?");
    u.bind(1, std::string(runStatusName(status)));
    u.bind(2, endedAt.empty() ? nowUtc() : endedAt);
    u.bind(3, exitReason);
    u.bind(4, run);
    if (u.exec() == 0)
      throw StoreError(fmt::format("{}: cannot finish run {}: there is no such run in the store", s.path, run));
    t.commit();
  });
}

int Store::recoverAbandonedRuns() { return impl_->recoverAbandonedRuns(); }

std::optional<RunRecord> Store::run(int64_t id) const {
  const Impl& s = *impl_;
  return s.guard("reading a run", [&] {
    SQLite::Statement q(*s.db, fmt::format("SELECT {} FROM run WHERE id = ?", kRunColumns));
    q.bind(1, id);
    if (!q.executeStep()) return std::optional<RunRecord>();
    return std::optional<RunRecord>(s.readRun(q));
  });
}

std::vector<RunRecord> Store::runs() const {
  const Impl& s = *impl_;
  return s.guard("listing runs", [&] {
    SQLite::Statement q(*s.db, fmt::format("SELECT {} FROM run ORDER BY id DESC", kRunColumns));
    std::vector<RunRecord> out;
    while (q.executeStep()) out.push_back(s.readRun(q));
    return out;
  });
}

namespace {

// One row of SELECT rank, step, warmup, seconds, compute_seconds, communication_seconds, loss,
// peak_memory_bytes, cpu_seconds FROM step.
StepRecord stepRow(SQLite::Statement& q) {
  StepRecord x;
  x.rank = q.getColumn(0).getInt();
  x.step = q.getColumn(1).getInt64();
  x.warmup = q.getColumn(2).getInt() != 0;
  x.seconds = real(q.getColumn(3));
  x.computeSeconds = real(q.getColumn(4));
  x.communicationSeconds = real(q.getColumn(5));
  x.loss = real(q.getColumn(6));
  x.peakMemoryBytes = real(q.getColumn(7));
  x.cpuSeconds = real(q.getColumn(8));
  return x;
}

}  // namespace

std::vector<StepRecord> Store::steps(int64_t run) const {
  const Impl& s = *impl_;
  return s.guard(fmt::format("reading the steps of run {}", run), [&] {
    SQLite::Statement q(*s.db,
                        "SELECT rank, step, warmup, seconds, compute_seconds, communication_seconds, loss, "
                        "peak_memory_bytes, cpu_seconds FROM step WHERE run_id = ? ORDER BY step, rank");
    q.bind(1, run);
    std::vector<StepRecord> out;
    while (q.executeStep()) {
      out.push_back(stepRow(q));
    }
    return out;
  });
}

std::vector<StepRecord> Store::steps(int64_t run, const std::vector<int64_t>& afterStep, int ranks) const {
  const Impl& s = *impl_;
  return s.guard(fmt::format("reading the new steps of run {}", run), [&] {
    SQLite::Statement q(*s.db,
                        "SELECT rank, step, warmup, seconds, compute_seconds, communication_seconds, loss, "
                        "peak_memory_bytes, cpu_seconds FROM step WHERE run_id = ? AND rank = ? AND step > ? "
                        "ORDER BY step");
    std::vector<StepRecord> out;
    for (int rank = 0; rank < ranks; ++rank) {
      q.reset();
      q.bind(1, run);
      q.bind(2, rank);
      q.bind(3, static_cast<size_t>(rank) < afterStep.size() ? afterStep[static_cast<size_t>(rank)]
                                                           : std::numeric_limits<int64_t>::min());
      while (q.executeStep()) {
        out.push_back(stepRow(q));
      }
    }
    return out;
  });
}

std::vector<StageRecord> Store::stages(int64_t run) const {
  const Impl& s = *impl_;
  return s.guard(fmt::format("reading the stages of run {}", run), [&] {
    SQLite::Statement q(*s.db,
                        "SELECT rank, stage, compute_seconds, communication_seconds FROM stage WHERE run_id = ? "
                        "ORDER BY rank, stage");
    q.bind(1, run);
    std::vector<StageRecord> out;
    while (q.executeStep())
      out.push_back({q.getColumn(0).getInt(), q.getColumn(1).getInt(), real(q.getColumn(2)), real(q.getColumn(3))});
    return out;
  });
}

}  // namespace hap::db
