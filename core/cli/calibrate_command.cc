#include "core/cli/calibrate_command.h"

#include <filesystem>
#include <iostream>
#include <sstream>

#include "core/cli/command.h"
#include "core/config/config_error.h"
#include "core/env/cache_dir.h"
#include "core/env/cpu_gemm.h"
#include "core/env/gemm_calibration.h"
#include "core/env/threads.h"

namespace memsweep::cli {
namespace {

c10::ScalarType DtypeOf(const std::string& name) {
  return name == "bfloat16" ? c10::kBFloat16 : c10::kFloat;
}

ExitCode Calibrate(const CalibrateOptions& options) {
  if (options.show) {
    std::cout << KeptCalibrationsText() << "\n";
    return ExitCode::kOk;
  }
  c10::Device device(c10::kCPU);
  try {
    device = c10::Device(options.device);
  } catch (const std::exception&) {
    device = c10::Device(c10::kMeta);  // refused just below
  }
  if (!device.is_cpu() && !device.is_cuda()) {
    throw config::ConfigError("--device " + options.device + ": expected cpu, cuda or cuda:N");
  }
  env::SetThreads(options.threads);
  for (const std::string& name : options.dtypes) {
    const c10::ScalarType dtype = DtypeOf(name);
    // The GEMM paths a run with the default [device] settings takes (env/cpu_gemm.h).
    if (device.is_cpu()) {
      env::UseFp32Gemm(env::ChooseFp32Gemm(env::Fp32GemmSetting::kAuto));
      env::UseBf16Gemm(dtype == c10::kBFloat16 ? env::ChooseBf16Gemm(env::Bf16GemmSetting::kAuto)
                                              : env::Bf16Gemm::kNative);
    }
    const env::GemmCalibration kept = env::RecalibrateGemm(dtype, env::Recalibrate::kAlways, device);
    std::cout << name << " on " << device.str() << ": " << kept.Describe() << "\n";
    std::cout << "  kept in " << (kept.file.empty() ? std::string("(no cache folder)") : kept.file)
              << "\n";
    if (kept.TakenUnderLoad()) {
      std::cout << "  warning: other processes were busy while it measured; the figure may be "
                   "low. Run `memsweep calibrate` again when the machine is idle\n";
    }
  }
  return ExitCode::kOk;
}

}  // namespace

std::string KeptCalibrationsText() {
  const std::vector<env::GemmCalibration> kept = env::KeptGemmCalibrations();
  std::ostringstream text;
  const std::filesystem::path dir = env::CacheDir("gemm");
  text << "GEMM calibrations (MFU's peaks) kept in " << (dir.empty() ? "(no cache folder)" : dir.string())
       << ":" << (kept.empty() ? " none yet (a run or `memsweep calibrate` measures them)" : "")
       << "\n";
  for (const env::GemmCalibration& c : kept) {
    text << "  " << std::filesystem::path(c.file).filename().string() << "\n    " << c.Describe()
         << (c.TakenUnderLoad() ? " (taken under load: may be low)" : "") << "\n";
  }
  if (!kept.empty()) text << "  `memsweep calibrate` measures them afresh\n";
  std::string lines = text.str();
  lines.pop_back();  // the last newline: the caller ends the text
  return lines;
}

void AddCalibrateCommand(CLI::App& app, CalibrateOptions& options, ExitCode& exit_code) {
  CLI::App* calibrate = app.add_subcommand(
      "calibrate",
      "Measure this machine's GEMM peaks (MFU's denominators) afresh and keep them, with when and "
      "under what load; --show lists the kept ones");
  calibrate->add_option("--dtype", options.dtypes, "Dtypes to measure")
      ->check(CLI::IsMember({"float32", "bfloat16"}))
      ->capture_default_str();
  calibrate->add_option("--threads", options.threads,
                        "Intra-op threads, as a run's [device] threads (0: every core)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  calibrate->add_option("--device", options.device, "cpu, cuda or cuda:N")->capture_default_str();
  calibrate->add_flag("--show", options.show, "List the kept figures; measure nothing");
  AddCommand(calibrate, exit_code, [&options] { return Calibrate(options); });
}

}  // namespace memsweep::cli
