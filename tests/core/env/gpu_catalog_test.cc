// The table of named GPUs behind `[device] emulate = "<name>"` (docs/gpu-models.md): the names
// experiment files use, how they are looked up, and figures that agree with each other and with
// the capacity each card is sold with.
#include "core/env/gpu_catalog.h"

#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>
#include <vector>

// Own namespace: the unity build puts this file in one translation unit with other tests.
namespace memsweep::env::gpu_catalog_test {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

TEST(GpuCatalog, HasEveryRequiredName) {
  for (const char* name : {"a10g", "rtx4090", "l4", "t4", "rtx3060-laptop", "l40s", "a100-40gb",
                           "a100-80gb", "h100-80gb", "h200"}) {
    const GpuModel* gpu = FindGpu(name);
    ASSERT_NE(gpu, nullptr) << name;
    EXPECT_EQ(gpu->name, name);
  }
}

TEST(GpuCatalog, FindGpuIgnoresCaseAndRejectsUnknownNames) {
  const GpuModel* a10g = FindGpu("a10g");
  ASSERT_NE(a10g, nullptr);
  EXPECT_EQ(FindGpu("A10G"), a10g);
  EXPECT_EQ(FindGpu("A10g"), a10g);
  EXPECT_EQ(FindGpu("H100-80GB"), FindGpu("h100-80gb"));
  EXPECT_EQ(FindGpu("RTX3060-Laptop"), FindGpu("rtx3060-laptop"));
  EXPECT_EQ(FindGpu("a10"), nullptr);
  EXPECT_EQ(FindGpu("a10g "), nullptr);
  EXPECT_EQ(FindGpu(""), nullptr);
  EXPECT_EQ(FindGpu("NVIDIA A10G"), nullptr);  // names, not product names
}

TEST(GpuCatalog, NamesAreUniqueLowercaseAndListedInCatalogOrder) {
  const std::vector<std::string> names = GpuNames();
  ASSERT_EQ(names.size(), GpuCatalog().size());
  std::set<std::string> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    EXPECT_EQ(name, GpuCatalog()[i].name);
    EXPECT_FALSE(name.empty());
    EXPECT_TRUE(seen.insert(name).second) << "duplicate " << name;
    for (char c : name) {
      EXPECT_TRUE(std::islower(static_cast<unsigned char>(c)) ||
                  std::isdigit(static_cast<unsigned char>(c)) || c == '-')
          << name;
    }
  }
}

TEST(GpuCatalog, IsOrderedByCapacityThenName) {
  const std::vector<GpuModel>& catalog = GpuCatalog();
  for (size_t i = 1; i < catalog.size(); ++i) {
    const GpuModel& a = catalog[i - 1];
    const GpuModel& b = catalog[i];
    EXPECT_TRUE(a.nominal_gib < b.nominal_gib || (a.nominal_gib == b.nominal_gib && a.name < b.name))
        << a.name << " before " << b.name;
  }
}

TEST(GpuCatalog, TotalExceedsContextWhichIsPositive) {
  for (const GpuModel& gpu : GpuCatalog()) {
    EXPECT_GT(gpu.context_bytes, 0) << gpu.name;
    EXPECT_GT(gpu.total_bytes, gpu.context_bytes) << gpu.name;
    // A context is hundreds of MiB, not GiB: a figure outside this range is a unit slip.
    EXPECT_GE(gpu.context_bytes, 64 << 20) << gpu.name;
    EXPECT_LE(gpu.context_bytes, 2 * kGiB) << gpu.name;
  }
}

TEST(GpuCatalog, UsableBytesIsTotalMinusContext) {
  for (const GpuModel& gpu : GpuCatalog()) {
    EXPECT_EQ(gpu.UsableBytes(), gpu.total_bytes - gpu.context_bytes) << gpu.name;
    EXPECT_GT(gpu.UsableBytes(), 0) << gpu.name;
  }
  const GpuModel custom{.name = "custom",
                        .product = "emulate = \"20GiB\"",
                        .total_bytes = 20 * kGiB,
                        .context_bytes = int64_t{600} << 20,
                        .source = "test",
                        .smi_total_bytes = 20 * kGiB,
                        .smi_source = "test",
                        .nominal_gib = 20};
  EXPECT_EQ(custom.UsableBytes(), 20 * kGiB - (int64_t{600} << 20));
}

TEST(GpuCatalog, SizesAgreeWithTheCapacityEachCardIsSoldWith) {
  for (const GpuModel& gpu : GpuCatalog()) {
    const int64_t nominal = gpu.nominal_gib * kGiB;
    // The CUDA total is the DRAM less ECC (1/16 on GDDR cards with ECC on) and the driver's
    // reserve: never more than the DRAM, never below 90% of it.
    EXPECT_LE(gpu.smi_total_bytes, nominal) << gpu.name;
    EXPECT_LT(gpu.total_bytes, gpu.smi_total_bytes) << gpu.name;
    EXPECT_GE(gpu.total_bytes, nominal / 10 * 9) << gpu.name;
  }
  const auto total = [](const char* name) { return FindGpu(name)->total_bytes; };
  EXPECT_GE(total("a10g"), 22 * kGiB);
  EXPECT_LE(total("a10g"), int64_t{24'000'000'000});  // "24 GB"
  EXPECT_GE(total("t4"), 14 * kGiB);
  EXPECT_LE(total("t4"), int64_t{16'000'000'000});  // "16 GB"
  EXPECT_GE(total("rtx3060-laptop"), 5 * kGiB + kGiB / 2);
  EXPECT_LE(total("rtx3060-laptop"), 6 * kGiB);  // "6 GB" of GDDR6, no ECC
  EXPECT_GE(total("h100-80gb"), 78 * kGiB);
  EXPECT_LE(total("h100-80gb"), 80 * kGiB);
  EXPECT_GE(total("h200"), 139 * kGiB);
  EXPECT_LE(total("h200"), 141 * kGiB);  // "141 GB" of HBM3e
}

TEST(GpuCatalog, EveryFigureNamesItsSource) {
  for (const GpuModel& gpu : GpuCatalog()) {
    EXPECT_FALSE(gpu.product.empty()) << gpu.name;
    EXPECT_FALSE(gpu.source.empty()) << gpu.name;
    EXPECT_FALSE(gpu.smi_source.empty()) << gpu.name;
    EXPECT_EQ(gpu.source.find('\n'), std::string::npos) << gpu.name;
    EXPECT_EQ(gpu.smi_source.find('\n'), std::string::npos) << gpu.name;
  }
}

}  // namespace
}  // namespace memsweep::env::gpu_catalog_test
