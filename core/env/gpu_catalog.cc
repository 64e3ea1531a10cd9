#include "core/env/gpu_catalog.h"

#include <algorithm>
#include <cctype>

namespace memsweep::env {
namespace {

constexpr int64_t MiB(int64_t n) { return n << 20; }

// Totals quoted in GiB with two decimals (PyTorch's out-of-memory text) are converted to the
// nearest MiB; such a figure is good to +-5 MiB, a context derived from three of them to +-15 MiB.
// Context = "this process has X in use" - "X allocated by PyTorch" - "X reserved by PyTorch but
// unallocated", all from the same report.
std::vector<GpuModel> Build() {
  return {
      {.name = "rtx3060-laptop",
       .product = "NVIDIA GeForce RTX 3060 Laptop GPU",
       .total_bytes = MiB(5939),    // 5.80 GiB
       .context_bytes = MiB(224),  // see a10g
       .source = "total: OOM 'total capacity 5.80 GiB' on a 6 GB RTX 3060, "
                 "github.com/JiehongLin/SAM-6D/issues/13 (Laptop part unverified); context: "
                 "estimate = A10 (sm_86) figure, github.com/zai-org/CogVLM/issues/236",
       .smi_total_bytes = MiB(6144),
       .smi_source = "nvidia-smi '6144MiB' on an RTX 3060 Laptop (6G), "
                     "github.com/kwonathan/language-models-trajectory-generators/issues/3",
       .nominal_gib = 6,
       .compute_capability = 86},
      {.name = "rtx2080",
       .product = "NVIDIA GeForce RTX 2080",
       .total_bytes = MiB(7987),   // 7.80 GiB
       .context_bytes = MiB(162),  // t4's 141 MiB x 46/40 SMs
       .source = "total: OOM '7.80 GiB total capacity' on an 'Nvidia 2080 8GB' under Ubuntu 16, "
                 "github.com/zju3dv/mvpose/issues/76; context: estimate = the T4 figure (same "
                 "TU104 chip, sm_75) scaled by SMs, 141 MiB x 46/40",
       .smi_total_bytes = MiB(8192),
       .smi_source = "stand-in: nvidia-smi 'FB Memory Usage Total 8192 MiB' on an RTX 2080 SUPER "
                     "(same TU104, 8 GB; drivers 595.71.05 and 610.57.04, Linux), "
                     "github.com/utkuozdemir/nvidia_gpu_exporter internal/captures",
       .nominal_gib = 8,
       .compute_capability = 75},
      {.name = "rtx3070",
       .product = "NVIDIA GeForce RTX 3070",
       .total_bytes = MiB(7967),   // 7.78 GiB
       .context_bytes = MiB(179),  // 7.39 GiB - 7.21 GiB - 5.22 MiB
       .source = "OOM on an RTX 3070: 'total capacty of 7.78 GiB', 7.39 GiB in use - 7.21 GiB - "
                 "5.22 MiB, github.com/meta-llama/codellama/issues/82",
       .smi_total_bytes = MiB(8192),
       .smi_source = "nvidia-smi '8192MiB' on an RTX 3070 (driver 570.195.03), "
                     "github.com/ace-step/ACE-Step/issues/344",
       .nominal_gib = 8,
       .compute_capability = 86},
      {.name = "rtx4060",
       .product = "NVIDIA GeForce RTX 4060",
       .total_bytes = MiB(7813),   // 7.63 GiB
       .context_bytes = MiB(109),  // 7.61 GiB - 7.34 GiB - 167.80 MiB
       .source = "OOM on an RTX 4060 laptop under Pop!_OS: 'total capacty of 7.63 GiB', 7.61 GiB "
                 "in use - 7.34 GiB - 167.80 MiB, "
                 "github.com/robbyant-research/MagicQuill/issues/126 (laptop part, same AD107 "
                 "and 8 GB; desktop card unverified)",
       .smi_total_bytes = MiB(8188),
       .smi_source = "nvidia-smi '8188MiB' on a desktop MSI RTX 4060 8 GB (driver 591.86), "
                     "github.com/HawaiiBeach/TinyNvidiaUpdateChecker/issues/263",
       .nominal_gib = 8,
       .compute_capability = 89},
      {.name = "rtx3080-10gb",
       .product = "NVIDIA GeForce RTX 3080",
       .total_bytes = MiB(10015),  // 9.78 GiB
       .context_bytes = MiB(224),  // see a10g
       .source = "total: OOM '9.78 GiB total capacity' on an RTX 3080, "
                 "github.com/zai-org/CogVideo/issues/34; context: estimate = A10 figure (GA102, "
                 "sm_86), github.com/zai-org/CogVLM/issues/236",
       .smi_total_bytes = MiB(10240),
       .smi_source = "estimate: the full 10 GiB, as nvidia-smi shows the full DRAM on the other "
                     "GeForce Ampere cards here (rtx3070 8192MiB, rtx3060-12gb 12288MiB)",
       .nominal_gib = 10,
       .compute_capability = 86},
      {.name = "rtx3060-12gb",
       .product = "NVIDIA GeForce RTX 3060",
       .total_bytes = MiB(12032),  // 11.75 GiB
       .context_bytes = MiB(179),  // see rtx3070
       .source = "total: OOM '11.75 GiB total capacity' on a 12 GB RTX 3060 under GNOME, "
                 "github.com/smy20011/dreambooth-gui/issues/78; context: estimate = the rtx3070 "
                 "figure (sm_86, GA104 with 46 SMs against GA106's 28)",
       .smi_total_bytes = MiB(12288),
       .smi_source = "nvidia-smi '12288MiB' on an RTX 3060 12 GB (driver 580.95.05), "
                     "github.com/geerlingguy/raspberry-pi-pcie-devices/issues/790",
       .nominal_gib = 12,
       .compute_capability = 86},
      {.name = "rtx4070",
       .product = "NVIDIA GeForce RTX 4070",
       .total_bytes = MiB(11981),  // 11.70 GiB
       .context_bytes = MiB(236),  // see l4
       .source = "total: estimate = OOM '11.70 GiB total capacity' on an RTX 4070 Ti (same AD104 "
                 "and 12 GB, same nvidia-smi total; driver 545.23.08), "
                 "github.com/Kwai-Kolors/Kolors/issues/11; context: estimate = L4 figure (AD104 "
                 "with 58 SMs against 46), github.com/ArcInstitute/evo2/issues/190",
       .smi_total_bytes = MiB(12282),
       .smi_source = "nvidia-smi '12282MiB' on an RTX 4070 (driver 550.40.07), "
                     "github.com/Frogging-Family/nvidia-all/pull/212",
       .nominal_gib = 12,
       .compute_capability = 89},
      {.name = "rtx-a4000",
       .product = "NVIDIA RTX A4000",
       .total_bytes = MiB(15985),  // 15.61 GiB
       .context_bytes = MiB(210),  // 15.51 GiB - 15.01 GiB - 301.92 MiB
       .source = "OOM on an RTX A4000: 'total capacity of 15.61 GiB', 15.51 GiB in use - 15.01 GiB "
                 "- 301.92 MiB, github.com/DengKaiCQ/VGGT-Long/issues/6",
       .smi_total_bytes = MiB(16376),
       .smi_source = "nvidia-smi '16376MiB' on an RTX A4000 (driver 580.95.05), "
                     "github.com/geerlingguy/raspberry-pi-pcie-devices/issues/791",
       .nominal_gib = 16,
       .compute_capability = 86},
      {.name = "rtx4060ti-16gb",
       .product = "NVIDIA GeForce RTX 4060 Ti",
       .total_bytes = MiB(15923),  // 15.55 GiB
       .context_bytes = MiB(256),  // 15.38 GiB - 14.87 GiB - 266.35 MiB
       .source = "OOM on a 16 GB RTX 4060 Ti: 'total capacity of 15.55 GiB', 15.38 GiB in use - "
                 "14.87 GiB - 266.35 MiB (that process used CUDA graphs), "
                 "github.com/boson-ai/higgs-audio/issues/48",
       .smi_total_bytes = MiB(16376),
       .smi_source = "estimate: '16376 MiB' as on the other 16 GB cards here (RTX 4080 SUPER, "
                     "RTX A4000)",
       .nominal_gib = 16,
       .compute_capability = 89},
      {.name = "rtx4080",
       .product = "NVIDIA GeForce RTX 4080",
       .total_bytes = MiB(15942),  // FB total 16376 MiB - reserved 434 MiB
       .context_bytes = MiB(504),  // see rtx4090
       .source = "total: estimate = nvidia-smi 'FB Memory Usage' Total 16376 MiB - Reserved "
                 "434 MiB on an RTX 4080 SUPER (same AD103 and 16 GB; driver 595.71.05, Fedora), "
                 "github.com/utkuozdemir/nvidia_gpu_exporter internal/captures (on the H200 that "
                 "difference equals the total memsweep measured, to 1 MiB); context: estimate = "
                 "RTX 4090 figure (AD102, sm_89), github.com/3DTopia/Phidias-Diffusion/issues/8",
       .smi_total_bytes = MiB(16376),
       .smi_source = "stand-in: nvidia-smi 'FB Memory Usage Total 16376 MiB' on an RTX 4080 SUPER "
                     "(same AD103 and 16 GB), github.com/utkuozdemir/nvidia_gpu_exporter "
                     "internal/captures",
       .nominal_gib = 16,
       .compute_capability = 89},
      {.name = "t4",
       .product = "Tesla T4",
       .total_bytes = MiB(15095),
       .context_bytes = MiB(141),  // 14.52 GiB - 14.06 GiB - 330.42 MiB
       .source = "total: torch total_memory=15095MB (driver 550.54.15), "
                 "github.com/mryab/efficient-dl-systems week01_intro/seminar.ipynb; context: OOM "
                 "14.52 GiB in use - 14.06 GiB - 330.42 MiB, "
                 "github.com/FoundationVision/GenerateU/issues/10",
       .smi_total_bytes = MiB(15360),
       .smi_source = "nvidia-smi '15360MiB', same seminar.ipynb; also "
                     "github.com/modal-labs/modal-client/pull/2797",
       .nominal_gib = 16,
       .compute_capability = 75},
      {.name = "a10g",
       .product = "NVIDIA A10G",
       .total_bytes = MiB(22587),
       .context_bytes = MiB(224),  // 21.91 GiB - 21.69 GiB - 1.55 MiB
       .source = "total: torch total_memory=22587MB on NVIDIA A10G, TorchCodec CUDA-decoding "
                 "tutorial output (torch 2.15 nightly); context: estimate from an A10 (same GA102) "
                 "OOM, 21.91 GiB in use - 21.69 GiB - 1.55 MiB, "
                 "github.com/zai-org/CogVLM/issues/236",
       .smi_total_bytes = MiB(23028),
       .smi_source = "nvidia-smi '23028MiB' on A10G (driver 535.247.01), "
                     "github.com/NVIDIA/DCGM/issues/232",
       .nominal_gib = 24,
       .compute_capability = 86},
      {.name = "l4",
       .product = "NVIDIA L4",
       .total_bytes = MiB(22559),  // 22.03 GiB
       .context_bytes = MiB(236),  // 20.78 GiB - 18.66 GiB - 1.89 GiB
       .source = "OOM on an L4: 'total capacity of 22.03 GiB', 20.78 GiB in use - 18.66 GiB - "
                 "1.89 GiB, github.com/ArcInstitute/evo2/issues/190",
       .smi_total_bytes = MiB(23034),
       .smi_source = "nvidia-smi '23034MiB', github.com/modal-labs/modal-client/pull/2797",
       .nominal_gib = 24,
       .compute_capability = 89},
      {.name = "rtx4090",
       .product = "NVIDIA GeForce RTX 4090",
       .total_bytes = MiB(24207),  // 23.64 GiB
       .context_bytes = MiB(504),  // 14.56 GiB - 13.86 GiB - 213.20 MiB
       .source = "OOM on an RTX 4090: 'total capacty of 23.64 GiB', 14.56 GiB in use - 13.86 GiB "
                 "- 213.20 MiB, github.com/3DTopia/Phidias-Diffusion/issues/8",
       .smi_total_bytes = MiB(24564),
       .smi_source = "nvidia-smi '24564MiB' (driver 550.163.01), github.com/RLinf/RLinf/issues/255",
       .nominal_gib = 24,
       .compute_capability = 89},
      {.name = "a100-40gb",
       .product = "NVIDIA A100 40GB",
       .total_bytes = MiB(40448),  // 39.50 GiB
       .context_bytes = MiB(501),  // 14.25 GiB - 12.87 GiB - 912.01 MiB
       .source = "OOM on one A100: 'total capacity of 39.50 GiB', 14.25 GiB in use - 12.87 GiB - "
                 "912.01 MiB, github.com/TianheWu/CoSeR/issues/10",
       .smi_total_bytes = MiB(40960),
       .smi_source = "nvidia-smi '40960MiB', github.com/modal-labs/modal-client/pull/2797",
       .nominal_gib = 40,
       .compute_capability = 80},
      {.name = "l40s",
       .product = "NVIDIA L40S",
       .total_bytes = MiB(45588),  // 44.52 GiB
       .context_bytes = MiB(514),  // 44.47 GiB - 43.89 GiB - 79.61 MiB
       .source = "OOM on an L40S: 'total capacity of 44.52 GiB', 44.47 GiB in use - 43.89 GiB - "
                 "79.61 MiB, github.com/huggingface/sentence-transformers/issues/3214",
       .smi_total_bytes = MiB(46068),
       .smi_source = "nvidia-smi '46068MiB', github.com/modal-labs/modal-client/pull/2797",
       .nominal_gib = 48,
       .compute_capability = 89},
      {.name = "a100-80gb",
       .product = "NVIDIA A100 80GB",
       .total_bytes = MiB(81039),  // 79.14 GiB
       .context_bytes = MiB(503),  // 9.25 GiB - 8.27 GiB - 500.38 MiB
       .source = "OOM on an 80 GB A100: 'total capacity of 79.14 GiB', 9.25 GiB in use - 8.27 GiB "
                 "- 500.38 MiB, github.com/lianqi1008/Control-GIC/issues/6",
       .smi_total_bytes = MiB(81920),
       .smi_source = "nvidia-smi '81920MiB', github.com/modal-labs/modal-client/pull/2797",
       .nominal_gib = 80,
       .compute_capability = 80},
      {.name = "h100-80gb",
       .product = "NVIDIA H100 80GB",
       .total_bytes = MiB(81009),  // 79.11 GiB
       .context_bytes = MiB(525),  // 12.62 GiB - 12.10 GiB - 7.55 MiB, on an H200
       .source = "total: vLLM OOM on H100 'total capacity of 79.11 GiB', "
                 "github.com/vllm-project/vllm/issues/27508; context: estimate from an H200 (same "
                 "132-SM GH100) OOM, github.com/sungwon-chae/arxiv_confi etu_logging.md",
       .smi_total_bytes = MiB(81559),
       .smi_source = "nvidia-smi '81559MiB', github.com/modal-labs/modal-client/pull/2797",
       .nominal_gib = 80,
       .compute_capability = 90},
      {.name = "h200",
       .product = "NVIDIA H200",
       .total_bytes = 150109880320,  // 139.80 GiB: cudaMemGetInfo's total, in bytes
       .context_bytes = MiB(758),    // median of 18 reports, 694-762 MiB
       .source = "measured by memsweep on an H200 (driver 580.159.04, CUDA 13.0, LibTorch 2.11.0; "
                 "tools/gpu-check, docs/gpu-runs/h200-2026-11-26): total from cudaMemGetInfo; "
                 "context: median over the GPU quickstart's 18 OOM reports of in use - allocated "
                 "- reserved but unallocated",
       .smi_total_bytes = MiB(143771),
       .smi_source = "nvidia-smi '143771MiB' on the same H200, "
                     "docs/gpu-runs/h200-2026-11-26/nvidia-smi.txt",
       .nominal_gib = 141,
       .compute_capability = 90},
  };
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

const std::vector<GpuModel>& GpuCatalog() {
  static const std::vector<GpuModel> catalog = Build();
  return catalog;
}

const GpuModel* FindGpu(std::string_view name) {
  for (const GpuModel& gpu : GpuCatalog()) {
    if (EqualsIgnoringCase(gpu.name, name)) return &gpu;
  }
  return nullptr;
}

std::vector<std::string> GpuNames() {
  std::vector<std::string> names;
  names.reserve(GpuCatalog().size());
  for (const GpuModel& gpu : GpuCatalog()) names.push_back(gpu.name);
  return names;
}

}  // namespace memsweep::env
