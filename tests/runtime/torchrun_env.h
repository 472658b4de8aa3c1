// The torchrun environment a test gives the worker processes it starts itself (tst_collectives,
// tst_exactness): rank `rank` of `world` rendezvousing on 127.0.0.1:`port`, every collective
// bounded by `timeoutSeconds`, one intra-op thread; on top of the test's own environment.
#pragma once

#include <QProcessEnvironment>

inline QProcessEnvironment torchrunEnvironment(int rank, int world, int port, int timeoutSeconds) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("RANK", QString::number(rank));
  env.insert("LOCAL_RANK", QString::number(rank));
  env.insert("WORLD_SIZE", QString::number(world));
  env.insert("MASTER_ADDR", "127.0.0.1");
  env.insert("MASTER_PORT", QString::number(port));
  env.insert("HAP_TIMEOUT_S", QString::number(timeoutSeconds));
  env.insert("OMP_NUM_THREADS", "1");
  return env;
}
