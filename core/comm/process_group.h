// ProcessGroup: this rank's connection to the others: a c10d TCPStore (rank 0 serves it at
// MASTER_ADDR:MASTER_PORT, or torchrun's agent does: RankEnv::agent_store) and a c10d Gloo
// process group on top (NCCL when the ranks train on CUDA devices), exposed to strategies as the SDK's Communicator (memsweep/collectives.h)
// with every collective timed and its payload counted. The store also carries small messages
// between ranks (each rank's result JSON).
//
// Every collective and store wait gives up after `timeout_seconds`, so a rank that died or hangs
// turns into an error on the others instead of a hang.
//
//   dist::ProcessGroup group(*RankEnvFromEnvironment(), /*timeout_seconds=*/300);
//   trainer.SetCommunicator(&group.Comm());
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "core/comm/rank_env.h"
#include "memsweep/collectives.h"

namespace memsweep::dist {

// Totals since the group was made (or since the last Reset).
struct CommCounters {
  double seconds = 0.0;  // wall time inside collectives (waiting included)
  int64_t bytes = 0;     // payload bytes this rank contributed (docs/metrics.md)
  int64_t calls = 0;
};

class CountingCommunicator : public Communicator {
 public:
  virtual CommCounters Counters() const = 0;
};

class ProcessGroup {
 public:
  // `device`: cpu → Gloo; cuda:N → NCCL on that GPU (nccl_communicator.h).
  ProcessGroup(const RankEnv& env, double timeout_seconds,
               c10::Device device = c10::Device(c10::kCPU));
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  CountingCommunicator& Comm();
  int Rank() const { return env_.rank; }
  int WorldSize() const { return env_.world_size; }
  // Store messages: Set is visible to every rank; Get waits for the key (up to the timeout).
  void Set(const std::string& key, const std::string& value);
  std::string Get(const std::string& key);

 private:
  struct Impl;
  RankEnv env_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memsweep::dist
