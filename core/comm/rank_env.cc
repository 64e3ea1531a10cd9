#include "core/comm/rank_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "core/config/config_error.h"

namespace memsweep::dist {
namespace {

const char* Get(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// What the user has to set, for "is not set" messages.
std::string Contract(bool slurm) {
  return slurm ? "SLURM_PROCID is set and RANK is not: under srun set MASTER_ADDR and MASTER_PORT "
                 "(docs/distributed.md)"
               : "RANK is set: set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT "
                 "together, as torchrun does";
}

// `name`, or `fallback_name` when `name` is unset; its name goes into `used`.
int IntegerVariable(const char* name, const char* fallback_name, int minimum, bool slurm,
                    std::string* used = nullptr) {
  const char* text = Get(name);
  const char* source = name;
  if (text == nullptr && fallback_name != nullptr) {
    text = Get(fallback_name);
    source = fallback_name;
  }
  if (text == nullptr) {
    throw config::ConfigError(std::string("environment: ") + name + " is not set (" +
                              Contract(slurm) + ")");
  }
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < minimum || value > 1 << 20) {
    throw config::ConfigError(std::string("environment: ") + source + "=" + text +
                              " is not an integer >= " + std::to_string(minimum));
  }
  if (used != nullptr) *used = source;
  return static_cast<int>(value);
}

}  // namespace

std::optional<RankEnv> RankEnvFromEnvironment() {
  const bool slurm = Get("RANK") == nullptr && Get("SLURM_PROCID") != nullptr &&
                     Get("MASTER_ADDR") != nullptr;
  if (Get("RANK") == nullptr && !slurm) return std::nullopt;
  RankEnv env;
  env.rank = IntegerVariable("RANK", slurm ? "SLURM_PROCID" : nullptr, 0, slurm,
                             &env.rank_variable);
  env.world_size = IntegerVariable("WORLD_SIZE", slurm ? "SLURM_NTASKS" : nullptr, 1, slurm,
                                   &env.world_size_variable);
  env.local_rank = Get("LOCAL_RANK") || slurm
                       ? IntegerVariable("LOCAL_RANK", slurm ? "SLURM_LOCALID" : nullptr, 0, slurm)
                       : env.rank;
  const char* addr = Get("MASTER_ADDR");
  if (addr == nullptr) {
    throw config::ConfigError("environment: MASTER_ADDR is not set (the host of rank 0; " +
                              Contract(slurm) + ")");
  }
  env.master_addr = addr;
  env.master_port = IntegerVariable("MASTER_PORT", nullptr, 1, slurm);
  if (env.master_port > 65535) {
    throw config::ConfigError("environment: MASTER_PORT=" + std::to_string(env.master_port) +
                              " is not a TCP port (1 ... 65535)");
  }
  if (env.rank >= env.world_size) {
    throw config::ConfigError("environment: " + env.rank_variable + "=" +
                              std::to_string(env.rank) + " is not below " +
                              env.world_size_variable + "=" + std::to_string(env.world_size) +
                              " (ranks are 0 ... " + env.world_size_variable + "-1)");
  }
  // torchrun's static rendezvous (its default with --master_port): its agent already serves the
  // TCPStore at MASTER_ADDR:MASTER_PORT and tells the workers so.
  const char* agent_store = Get("TORCHELASTIC_USE_AGENT_STORE");
  env.agent_store = agent_store != nullptr && std::string(agent_store) == "True";
  if (Get("TORCHELASTIC_RESTART_COUNT") != nullptr) {
    env.restart_count = IntegerVariable("TORCHELASTIC_RESTART_COUNT", nullptr, 0, slurm);
  }
  return env;
}

std::map<std::string, std::string> RankVariables(const RankEnv& env) {
  return {{"RANK", std::to_string(env.rank)},
          {"WORLD_SIZE", std::to_string(env.world_size)},
          {"LOCAL_RANK", std::to_string(env.local_rank)},
          {"LOCAL_WORLD_SIZE", std::to_string(env.world_size)},
          {"MASTER_ADDR", env.master_addr},
          {"MASTER_PORT", std::to_string(env.master_port)}};
}

int FreeTcpPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed while choosing MASTER_PORT");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t length = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    close(fd);
    throw std::runtime_error("cannot bind a free port for MASTER_PORT");
  }
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

}  // namespace memsweep::dist
