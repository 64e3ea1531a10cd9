// The table of named GPUs behind `[device] emulate = "<name>"` (docs/gpu-models.md): the names
// experiment files use, how they are looked up, and figures that agree with each other and with
// the capacity each card is sold with.
#include "core/env/gpu_catalog.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

// Own namespace: the unity build puts this file in one translation unit with other tests.
namespace memsweep::env::gpu_catalog_test {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

TEST(GpuCatalog, HasEveryRequiredName) {
  for (const char* name :
       {"a10g", "rtx4090", "l4", "t4", "rtx3060-laptop", "l40s", "a100-40gb", "a100-80gb",
        "h100-80gb", "h200",
        // The consumer and workstation cards of 8, 10, 12 and 16 GB.
        "rtx2080", "rtx3070", "rtx4060", "rtx3080-10gb", "rtx3060-12gb", "rtx4070", "rtx-a4000",
        "rtx4060ti-16gb", "rtx4080"}) {
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
  EXPECT_EQ(FindGpu("RTX-A4000"), FindGpu("rtx-a4000"));
  EXPECT_EQ(FindGpu("RTX4060Ti-16GB"), FindGpu("rtx4060ti-16gb"));
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
                        .nominal_gib = 20,
                        .compute_capability = 86};
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
  // An 8 GB card leaves 7.5 to 8 GiB to CUDA (GDDR without ECC, less the driver's reserve).
  for (const GpuModel& gpu : GpuCatalog()) {
    if (gpu.nominal_gib != 8) continue;
    EXPECT_GE(gpu.total_bytes, 7 * kGiB + kGiB / 2) << gpu.name;
    EXPECT_LT(gpu.total_bytes, 8 * kGiB) << gpu.name;
  }
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

// docs/gpu-models.md's table is this catalog with every figure in MiB: the same names in the same
// order, the same bytes (MiB rounded to the nearest, GiB to two decimals), "estimate" / "stand-in"
// wherever `source` or `smi_source` says a figure is one.
struct DocRow {
  std::string name, product, total, smi, context, usable, arch;
};

std::string Trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" `");
  const size_t end = text.find_last_not_of(" `");
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

std::vector<DocRow> DocTableRows() {
  std::ifstream doc(MEMSWEEP_SOURCE_DIR "/docs/gpu-models.md");
  EXPECT_TRUE(doc.good()) << "docs/gpu-models.md";
  std::vector<DocRow> rows;
  bool in_table = false;
  std::string line;
  while (std::getline(doc, line)) {
    if (line.rfind("## ", 0) == 0) in_table = line == "## The table";
    if (!in_table || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream cells_in(line.substr(1));
    for (std::string cell; std::getline(cells_in, cell, '|');) cells.push_back(Trim(cell));
    while (!cells.empty() && cells.back().empty()) cells.pop_back();
    EXPECT_EQ(cells.size(), 7u) << line;
    if (cells.size() != 7) continue;
    rows.push_back({cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6]});
  }
  return rows;
}

// Whole MiB, rounded to the nearest (the H200's total is no whole number of them).
std::string Mib(int64_t bytes) {
  return std::to_string((bytes + (int64_t{1} << 19)) >> 20) + " MiB";
}

// "7967 MiB (7.78 GiB" for `bytes`; the cell goes on with ")" or a note.
std::string MibAndGib(int64_t bytes) {
  char gib[32];
  std::snprintf(gib, sizeof gib, " (%.2f GiB",
                static_cast<double>(bytes) / static_cast<double>(kGiB));
  return Mib(bytes) + gib;
}

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GpuCatalog, TheDocTableIsTheCatalog) {
  const std::vector<DocRow> rows = DocTableRows();
  ASSERT_EQ(rows.size(), GpuCatalog().size()) << "one row of docs/gpu-models.md per card";
  for (size_t i = 0; i < rows.size(); ++i) {
    const DocRow& row = rows[i];
    const GpuModel& gpu = GpuCatalog()[i];
    EXPECT_EQ(row.name, gpu.name) << "row " << i;
    EXPECT_EQ(row.product, gpu.product) << gpu.name;
    EXPECT_TRUE(StartsWith(row.total, MibAndGib(gpu.total_bytes))) << gpu.name << ": " << row.total;
    EXPECT_TRUE(StartsWith(row.smi, Mib(gpu.smi_total_bytes))) << gpu.name << ": " << row.smi;
    EXPECT_TRUE(StartsWith(row.context, Mib(gpu.context_bytes))) << gpu.name << ": " << row.context;
    EXPECT_TRUE(StartsWith(row.usable, MibAndGib(gpu.UsableBytes())))
        << gpu.name << ": " << row.usable;
    EXPECT_EQ(row.arch, "sm_" + std::to_string(gpu.compute_capability)) << gpu.name;
    EXPECT_EQ(Contains(row.total, "estimate"), Contains(gpu.source, "total: estimate"))
        << gpu.name << ": " << row.total;
    EXPECT_EQ(Contains(row.context, "estimate"), Contains(gpu.source, "context: estimate"))
        << gpu.name << ": " << row.context;
    EXPECT_EQ(Contains(row.smi, "estimate"), StartsWith(gpu.smi_source, "estimate"))
        << gpu.name << ": " << row.smi;
    EXPECT_EQ(Contains(row.smi, "stand-in"), StartsWith(gpu.smi_source, "stand-in"))
        << gpu.name << ": " << row.smi;
  }
}

// docs/experiment-format.md lists every name `emulate` takes, in the unknown-`emulate` error it
// quotes (run_config_loader.cc builds that list from GpuNames()).
TEST(GpuCatalog, TheExperimentFormatPageNamesEveryGpu) {
  std::ifstream doc(MEMSWEEP_SOURCE_DIR "/docs/experiment-format.md");
  ASSERT_TRUE(doc.good()) << "docs/experiment-format.md";
  std::string names;
  for (const std::string& name : GpuNames()) names += (names.empty() ? "" : ", ") + name;
  const std::string message = "`emulate must name a GPU (" + names + ") or give a capacity";
  std::string row;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("| unknown `emulate` |", 0) == 0) row = line;
  }
  EXPECT_TRUE(Contains(row, message)) << "docs/experiment-format.md's row: " << row
                                      << "\nexpected it to quote " << message;
}

}  // namespace
}  // namespace memsweep::env::gpu_catalog_test
