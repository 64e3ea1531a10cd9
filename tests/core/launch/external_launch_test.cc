// Ranks started from outside, as docs/distributed.md tells a user to do under torchrun or srun:
// `memsweep plan --write-cells` writes the cell file, then N `memsweep worker` processes run
// with the launcher's environment variables. torchrun and srun are not installed here; the tests
// set exactly the variables they set (torchrun's static rendezvous also serves the TCPStore from
// its agent: the test serves it the same way). Rank 0's result must hold every rank's figures and
// the loss trajectory of the same cell run through `memsweep run` (memsweep's own launcher).
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/comm/rank_env.h"
#include "support/cli_runner.h"
#include "support/run_configs.h"

extern char** environ;

namespace memsweep::dist {
namespace {

namespace fs = std::filesystem;
using testing_support::FreshTempDir;
using testing_support::RunMemsweep;
using testing_support::SourcePath;

using Variables = std::map<std::string, std::string>;

constexpr int kWorld = 2;
constexpr double kRankDeadlineSeconds = 180.0;  // a rank still running then has hung: killed

// Variables of any launcher: a rank starts with none of them but those its test gives it.
const std::set<std::string>& LaunchVariables() {
  static const std::set<std::string> names = {
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_NAME",
      "ROLE_RANK", "ROLE_WORLD_SIZE", "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
      "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
      "TORCHELASTIC_RUN_ID", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NODEID",
      "SLURM_NNODES"};
  return names;
}

struct RankOutcome {
  int exit_code = -1;  // -1: killed at the deadline or crashed
  std::string output;  // stdout and stderr
};

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// One `memsweep worker` per entry of `ranks`, all at once, each with this process's environment
// minus every launcher variable plus its own; waits for all of them.
std::vector<RankOutcome> RunWorkers(const fs::path& cell, const fs::path& source,
                                    const fs::path& result, const std::vector<Variables>& ranks) {
  const fs::path logs = result.parent_path();
  std::vector<pid_t> pids;
  for (size_t r = 0; r < ranks.size(); ++r) {
    // Built before fork: the child only redirects and execs.
    std::vector<std::string> env;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string text = *entry;
      if (LaunchVariables().count(text.substr(0, text.find('='))) == 0) env.push_back(text);
    }
    for (const auto& [name, value] : ranks[r]) env.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = {MEMSWEEP_BINARY, "worker",          "--cell",
                                     cell.string(),   "--source",        source.string(),
                                     "--result",      result.string()};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string log = (logs / ("rank" + std::to_string(r) + ".log")).string();
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<RankOutcome> outcomes(ranks.size());
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kRankDeadlineSeconds);
  size_t running = pids.size();
  while (running > 0) {
    for (size_t r = 0; r < pids.size(); ++r) {
      if (pids[r] <= 0) continue;
      int status = 0;
      const bool late = std::chrono::steady_clock::now() > deadline;
      if (late) kill(pids[r], SIGKILL);
      if (waitpid(pids[r], &status, late ? 0 : WNOHANG) != pids[r]) continue;
      outcomes[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      pids[r] = -1;
      --running;
    }
    if (running > 0) usleep(20000);
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    outcomes[r].output = ReadText(logs / ("rank" + std::to_string(r) + ".log"));
  }
  return outcomes;
}

// The variables torchrun's agent gives each worker (torch.distributed.elastic's
// LocalElasticAgent) on one machine.
std::vector<Variables> TorchrunVariables(int world, int port, bool agent_store) {
  std::vector<Variables> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.push_back({{"RANK", std::to_string(r)},
                     {"WORLD_SIZE", std::to_string(world)},
                     {"LOCAL_RANK", std::to_string(r)},
                     {"LOCAL_WORLD_SIZE", std::to_string(world)},
                     {"GROUP_RANK", "0"},
                     {"GROUP_WORLD_SIZE", "1"},
                     {"ROLE_NAME", "default"},
                     {"ROLE_RANK", std::to_string(r)},
                     {"ROLE_WORLD_SIZE", std::to_string(world)},
                     {"MASTER_ADDR", "127.0.0.1"},
                     {"MASTER_PORT", std::to_string(port)},
                     {"TORCHELASTIC_USE_AGENT_STORE", agent_store ? "True" : "False"},
                     {"TORCHELASTIC_RESTART_COUNT", "0"},
                     {"TORCHELASTIC_MAX_RESTARTS", "0"},
                     {"TORCHELASTIC_RUN_ID", "none"},
                     {"OMP_NUM_THREADS", "1"}});
  }
  return ranks;
}

// What `srun --ntasks=N` sets on one node, plus the MASTER_ADDR/MASTER_PORT the documented batch
// script exports.
std::vector<Variables> SlurmVariables(int world, const std::string& master_addr, int port) {
  std::vector<Variables> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.push_back({{"SLURM_PROCID", std::to_string(r)},
                     {"SLURM_NTASKS", std::to_string(world)},
                     {"SLURM_LOCALID", std::to_string(r)},
                     {"SLURM_NODEID", "0"},
                     {"SLURM_NNODES", "1"},
                     {"MASTER_ADDR", master_addr},
                     {"MASTER_PORT", std::to_string(port)}});
  }
  return ranks;
}

std::string Describe(const std::vector<RankOutcome>& outcomes) {
  std::string text;
  for (size_t r = 0; r < outcomes.size(); ++r) {
    text += "--- rank " + std::to_string(r) + " exit " + std::to_string(outcomes[r].exit_code) +
            "\n" + outcomes[r].output;
  }
  return text;
}

// One experiment (tiny model, two ranks, ddp, 3 steps), written once as a cell file, and run
// through `memsweep run` for the reference result when a test compares with it.
class ExternalLaunch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = FreshTempDir("external_launch");
    source_ = dir_ / "external.toml";
    std::ofstream(source_) << "[experiment]\nname = \"external\"\nsteps = 3\nwarmup_steps = 1\n"
                           << "seed = 7\n[model]\npreset = \"tiny\"\n[data]\npath = \""
                           << SourcePath("experiments/data/devils-dictionary.jsonl")
                           << "\"\n[optimizer]\nlr = 3e-3\nlr_warmup_steps = 1\n"
                           << "[device]\nthreads = 1\nworld_size = 2\ncollective_timeout = 60.0\n"
                           << "[strategies.batching]\nseq_len = 48\nmicro_batch_size = 2\n"
                           << "[strategies.sharding]\nplugin = \"ddp\"\n"
                           << "reduce_bucket_size = 5000\n";
    const auto plan =
        RunMemsweep("plan " + source_.string() + " --write-cells " + (dir_ / "cells").string());
    ASSERT_EQ(plan.exit_code, 0) << plan.output;
    for (const auto& entry : fs::directory_iterator(dir_ / "cells")) cell_ = entry.path();
    ASSERT_NE(plan.output.find(cell_.string()), std::string::npos) << plan.output;
  }

  void SetUp() override { ASSERT_FALSE(cell_.empty()) << "the suite's set-up wrote no cell file"; }

  // The cell run through `memsweep run`, once, by the first test that needs it.
  static const nlohmann::json& Reference() {
    if (!reference_.is_null()) return reference_;
    const fs::path db = dir_ / "results.db";
    const auto run = RunMemsweep("run " + source_.string() + " --db " + db.string());
    EXPECT_EQ(run.exit_code, 0) << run.output;
    // The sweep keeps the cell's result as <db dir>/<db stem>/<experiment>/cell<index>-<hash>.json:
    // the same stem as the cell file, so both name the same cell.
    reference_ = ReadJson(dir_ / "results" / "external" / (cell_.stem().string() + ".json"));
    EXPECT_FALSE(reference_.is_null()) << "no result for " << cell_.stem() << "\n" << run.output;
    return reference_;
  }

  // Rank 0's result against the reference: every rank's figures, the same losses bit for bit.
  static void ExpectSameRunAsMemsweepRun(const nlohmann::json& result, const std::string& log) {
    const nlohmann::json& reference = Reference();
    ASSERT_FALSE(reference.is_null());
    ASSERT_FALSE(result.is_null()) << "rank 0 wrote no result\n" << log;
    EXPECT_EQ(result.value("status", ""), "ok") << result.value("error", "") << "\n" << log;
    ASSERT_TRUE(result.contains("ranks")) << log;
    ASSERT_EQ(result["ranks"].size(), static_cast<size_t>(kWorld)) << result["ranks"].dump();
    for (int r = 0; r < kWorld; ++r) {
      const nlohmann::json& row = result["ranks"][r];
      const nlohmann::json& expected = reference["ranks"][r];
      EXPECT_EQ(row["rank"], r);
      EXPECT_EQ(row["status"], "ok") << row.dump();
      EXPECT_EQ(row["steps_completed"], 3) << row.dump();
      EXPECT_GT(row["comm_bytes"].get<int64_t>(), 0) << "rank " << r << " sent nothing";
      // Byte counts follow from the cell alone; timings and RSS do not.
      for (const char* key : {"params_bytes", "grads_bytes", "optimizer_bytes", "comm_bytes",
                              "comm_calls"}) {
        EXPECT_EQ(row[key], expected[key]) << "rank " << r << " " << key;
      }
      // The peak may catch a scalar or two more or less in flight when the machine is busy
      // (seen: 8 bytes under a parallel ctest run); anything beyond 4 KiB is a real difference.
      EXPECT_NEAR(row["peak_allocated_bytes"].get<double>(),
                  expected["peak_allocated_bytes"].get<double>(), 4096.0)
          << "rank " << r << " peak_allocated_bytes";
    }
    const nlohmann::json& steps = result["steps"];
    const nlohmann::json& reference_steps = reference["steps"];
    ASSERT_EQ(steps.size(), reference_steps.size()) << log;
    for (size_t s = 0; s < steps.size(); ++s) {
      // Bitwise: the same processes doing the same sums in the same order; only who started
      // them differs. JSON keeps a double exactly (shortest round-trip form).
      EXPECT_EQ(steps[s]["loss"].get<double>(), reference_steps[s]["loss"].get<double>())
          << "step " << s;
      EXPECT_EQ(steps[s]["grad_norm"].get<double>(), reference_steps[s]["grad_norm"].get<double>())
          << "step " << s;
    }
  }

  // A fresh directory for one test's results and rank logs.
  static fs::path RunDir(const std::string& name) {
    const fs::path run = dir_ / name;
    fs::remove_all(run);
    fs::create_directories(run);
    return run;
  }

  static fs::path dir_, source_, cell_;
  static nlohmann::json reference_;
};

fs::path ExternalLaunch::dir_, ExternalLaunch::source_, ExternalLaunch::cell_;
nlohmann::json ExternalLaunch::reference_;

// torchrun --nproc_per_node=2 --master_port=P (static rendezvous, its default then): the agent
// serves a TCPStore on P before it starts the workers and tells them so.
TEST_F(ExternalLaunch, TorchrunStaticRendezvousMatchesMemsweepRun) {
  const fs::path run = RunDir("torchrun_static");
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(FreeTcpPort());
  options.isServer = true;
  options.waitWorkers = false;
  options.timeout = std::chrono::seconds(60);
  c10d::TCPStore agent_store("127.0.0.1", options);
  const auto outcomes = RunWorkers(cell_, source_, run / "out.json",
                                   TorchrunVariables(kWorld, options.port, /*agent_store=*/true));
  for (const auto& outcome : outcomes) ASSERT_EQ(outcome.exit_code, 0) << Describe(outcomes);
  ExpectSameRunAsMemsweepRun(ReadJson(run / "out.json"), Describe(outcomes));
  // Rank 1 keeps its own result beside rank 0's (memsweep's launcher reads and removes it).
  const nlohmann::json rank1 = ReadJson(run / "out.json.rank1");
  ASSERT_FALSE(rank1.is_null()) << Describe(outcomes);
  EXPECT_EQ(rank1["dist"]["rank"], 1) << rank1["dist"].dump();
  EXPECT_EQ(rank1.value("status", ""), "ok");
}

// torchrun with a c10d rendezvous (--standalone or --rdzv-backend=c10d in the versions that do
// not share the agent's store): rank 0 serves the store at MASTER_PORT, as under memsweep.
TEST_F(ExternalLaunch, TorchrunC10dRendezvousMatchesMemsweepRun) {
  const fs::path run = RunDir("torchrun_c10d");
  const auto outcomes = RunWorkers(cell_, source_, run / "out.json",
                                   TorchrunVariables(kWorld, FreeTcpPort(), /*agent_store=*/false));
  for (const auto& outcome : outcomes) ASSERT_EQ(outcome.exit_code, 0) << Describe(outcomes);
  ExpectSameRunAsMemsweepRun(ReadJson(run / "out.json"), Describe(outcomes));
}

// srun --ntasks=2 with MASTER_ADDR (the first node's host name) and MASTER_PORT exported.
// Why ranks cannot meet at `host` (empty when they can): it must resolve, within 2 s, to an
// address of this machine. A minimal chroot or container without an /etc/hosts line for its host
// name fails that, and the ranks would wait minutes for a rendezvous that cannot happen.
std::string HostNameProblem(const std::string& host) {
  auto answer = std::make_shared<std::promise<std::string>>();
  std::future<std::string> problem = answer->get_future();
  std::thread([host, answer] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
    if (rc != 0) {
      answer->set_value("the host name '" + host + "' does not resolve (" + gai_strerror(rc) +
                        "); add it to /etc/hosts to run this test");
      return;
    }
    std::string why = "the host name '" + host + "' resolves to no address of this machine";
    for (const addrinfo* a = found; a != nullptr && !why.empty(); a = a->ai_next) {
      const int fd = socket(a->ai_family, SOCK_STREAM, 0);
      if (fd < 0) continue;
      if (bind(fd, a->ai_addr, a->ai_addrlen) == 0) why.clear();  // port 0: any free one
      close(fd);
    }
    freeaddrinfo(found);
    answer->set_value(why);
  }).detach();
  if (problem.wait_for(std::chrono::seconds(2)) != std::future_status::ready) {
    return "resolving the host name '" + host + "' took over 2 s";
  }
  return problem.get();
}

TEST_F(ExternalLaunch, SlurmVariablesMatchMemsweepRun) {
  const fs::path run = RunDir("slurm");
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0) << std::strerror(errno);
  // srun's ranks meet at the node's name (MASTER_ADDR as a batch script sets it).
  if (const std::string problem = HostNameProblem(host); !problem.empty()) {
    std::printf("skipped: %s\n", problem.c_str());
    GTEST_SKIP() << problem;
  }
  const auto outcomes =
      RunWorkers(cell_, source_, run / "out.json", SlurmVariables(kWorld, host, FreeTcpPort()));
  for (const auto& outcome : outcomes) ASSERT_EQ(outcome.exit_code, 0) << Describe(outcomes);
  ExpectSameRunAsMemsweepRun(ReadJson(run / "out.json"), Describe(outcomes));
}

// One rank started with `variables`: it must refuse before any rendezvous, with exit code 2, the
// message `expected` and no result file.
void ExpectRefused(const fs::path& cell, const fs::path& source, const fs::path& run,
                   const Variables& variables, const std::string& expected) {
  const auto outcomes = RunWorkers(cell, source, run / "out.json", {variables});
  EXPECT_EQ(outcomes[0].exit_code, 2) << outcomes[0].output;
  EXPECT_NE(outcomes[0].output.find("error: " + expected), std::string::npos)
      << "expected: " << expected << "\nfound: " << outcomes[0].output;
  EXPECT_FALSE(fs::exists(run / "out.json"));
}

TEST_F(ExternalLaunch, WorldSizeOtherThanTheCellsExitsTwo) {
  const fs::path run = RunDir("world_size");
  Variables torchrun = TorchrunVariables(3, FreeTcpPort(), false)[0];
  ExpectRefused(cell_, source_, run, torchrun,
                cell_.string() + ": [device] world_size = 2 but WORLD_SIZE=3 in the environment; "
                                 "start as many ranks as the cell has");
  Variables slurm = SlurmVariables(3, "127.0.0.1", FreeTcpPort())[0];
  ExpectRefused(cell_, source_, run, slurm,
                cell_.string() + ": [device] world_size = 2 but SLURM_NTASKS=3 in the "
                                 "environment; start as many ranks as the cell has");
}

TEST_F(ExternalLaunch, RankNotBelowWorldSizeExitsTwo) {
  const fs::path run = RunDir("rank");
  Variables torchrun = TorchrunVariables(kWorld, FreeTcpPort(), false)[0];
  torchrun["RANK"] = "2";
  ExpectRefused(cell_, source_, run, torchrun,
                "environment: RANK=2 is not below WORLD_SIZE=2 (ranks are 0 ... WORLD_SIZE-1)");
  Variables slurm = SlurmVariables(kWorld, "127.0.0.1", FreeTcpPort())[0];
  slurm["SLURM_PROCID"] = "2";
  ExpectRefused(cell_, source_, run, slurm,
                "environment: SLURM_PROCID=2 is not below SLURM_NTASKS=2 (ranks are 0 ... "
                "SLURM_NTASKS-1)");
}

TEST_F(ExternalLaunch, MissingMasterPortExitsTwo) {
  const fs::path run = RunDir("port");
  Variables torchrun = TorchrunVariables(kWorld, 1, false)[0];
  torchrun.erase("MASTER_PORT");
  ExpectRefused(cell_, source_, run, torchrun,
                "environment: MASTER_PORT is not set (RANK is set: set RANK, WORLD_SIZE, "
                "LOCAL_RANK, MASTER_ADDR and MASTER_PORT together, as torchrun does)");
  Variables slurm = SlurmVariables(kWorld, "127.0.0.1", 1)[0];
  slurm.erase("MASTER_PORT");
  ExpectRefused(cell_, source_, run, slurm,
                "environment: MASTER_PORT is not set (SLURM_PROCID is set and RANK is not: under "
                "srun set MASTER_ADDR and MASTER_PORT (docs/distributed.md))");
}

}  // namespace
}  // namespace memsweep::dist
