// RankEnv: where this process sits in a multi-process run, read from the torchrun environment
// contract (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; TORCHELASTIC_USE_AGENT_STORE
// and TORCHELASTIC_RESTART_COUNT when torchrun's agent serves the store). memsweep's own launcher
// (rank_launcher.h) sets the same variables, so a worker runs the same way under memsweep,
// torchrun or Slurm srun (docs/distributed.md).
//
//   std::optional<RankEnv> env = RankEnvFromEnvironment();   // nullopt: RANK is not set
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace memsweep::dist {

struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  // TORCHELASTIC_USE_AGENT_STORE=True (torchrun's static rendezvous, its default with
  // --master_port): torchrun's agent serves the TCPStore at MASTER_ADDR:MASTER_PORT, so every
  // rank, rank 0 included, connects to it as a client. Otherwise rank 0 serves it.
  bool agent_store = false;
  // TORCHELASTIC_RESTART_COUNT: torchrun's attempt; each attempt's keys are kept apart in the
  // agent's store.
  int restart_count = 0;
  // Where rank and world size came from ("RANK"/"WORLD_SIZE", or "SLURM_PROCID"/"SLURM_NTASKS"
  // under srun), for messages.
  std::string rank_variable = "RANK";
  std::string world_size_variable = "WORLD_SIZE";
};

// Reads the variables; nullopt when RANK is unset. Throws config::ConfigError naming the variable
// when one is missing or malformed, or when the rank is not below the world size. Slurm's
// SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID stand in for RANK/WORLD_SIZE/LOCAL_RANK when those are
// unset and MASTER_ADDR is set.
std::optional<RankEnv> RankEnvFromEnvironment();

// The variables for rank `rank` of `world_size` on this machine.
std::map<std::string, std::string> RankVariables(const RankEnv& env);

// A TCP port that was free a moment ago on 127.0.0.1 (bind to port 0, read it, close).
int FreeTcpPort();

}  // namespace memsweep::dist
