// A TCP port that is free on this machine now, for the rendezvous of local runs and tests (no
// fixed ports that could collide). The OS picks it (bind to port 0); a race with another process
// taking it before the store binds is possible but rare, and shows as a clear rendezvous error.
#pragma once

namespace hap::runtime {

// Throws RuntimeError when no socket can be bound on 127.0.0.1.
int freeTcpPort();

}  // namespace hap::runtime
