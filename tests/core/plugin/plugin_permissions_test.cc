// Plugins another user could have written are refused, as ssh refuses such keys
// (core/plugin/plugin_permissions.h), unless MEMSWEEP_ALLOW_WRITABLE_PLUGINS=1.
#include "core/plugin/plugin_permissions.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/plugin/plugin_registry.h"
#include "support/scoped_env.h"

namespace memsweep::plugin {
namespace {

namespace fs = std::filesystem;
using testing_support::ScopedEnv;

// A copy of the good fixture plugin in folder/sub/, with 0755 folders and a 0755 library.
struct CopiedPlugin {
  fs::path top, folder, library;
};

CopiedPlugin CopyGoodPlugin(const std::string& name) {
  CopiedPlugin copy;
  copy.top = fs::path(::testing::TempDir()) / ("memsweep_perm_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(copy.top);
  copy.folder = copy.top / "sub";
  fs::create_directories(copy.folder);
  copy.library = copy.folder / "fixture_good.so";
  fs::copy_file(std::string(MEMSWEEP_FIXTURE_DIR) + "/good/fixture_good.so", copy.library);
  for (const fs::path& p : {copy.top, copy.folder, copy.library}) {
    fs::permissions(p, fs::perms(0755), fs::perm_options::replace);
  }
  return copy;
}

std::string LoadFailure(const fs::path& library) {
  PluginRegistry registry;
  const std::vector<PluginFailure> failures = registry.LoadPath(library.string(), "--path");
  if (failures.empty()) {
    EXPECT_NE(registry.Find("callbacks", "fixture-good"), nullptr);
    return "";
  }
  return failures.front().reason;
}

TEST(PluginPermissionsTest, ALibraryOthersMayWriteIsRefusedSayingWhatToDo) {
  ScopedEnv strict(kAllowWritablePluginsVariable, nullptr);
  const CopiedPlugin copy = CopyGoodPlugin("file");
  EXPECT_EQ(LoadFailure(copy.library), "");
  fs::permissions(copy.library, fs::perms(0757), fs::perm_options::replace);
  EXPECT_EQ(LoadFailure(copy.library),
            copy.library.string() + ": the library (mode 0757) is not safe: any user may write "
                                    "it; memsweep loads no plugin another user could have "
                                    "replaced: chmod go-w it, or set "
                                    "MEMSWEEP_ALLOW_WRITABLE_PLUGINS=1 to load it anyway");
  {
    ScopedEnv allow(kAllowWritablePluginsVariable, "1");
    EXPECT_EQ(LoadFailure(copy.library), "");
  }
  fs::remove_all(copy.top);
}

TEST(PluginPermissionsTest, AFolderOthersMayWriteIsRefused) {
  ScopedEnv strict(kAllowWritablePluginsVariable, nullptr);
  const CopiedPlugin copy = CopyGoodPlugin("folder");
  // Its own folder: others could put a library there, even with the sticky bit.
  fs::permissions(copy.folder, fs::perms(01777), fs::perm_options::replace);
  EXPECT_NE(LoadFailure(copy.library).find(": its folder " + copy.folder.string() +
                                           " (mode 1777) is not safe: any user may write it"),
            std::string::npos);
  // Loading the folder refuses the library in it too.
  PluginRegistry registry;
  EXPECT_EQ(registry.LoadPath(copy.folder.string(), "--path").size(), 1u);
  fs::permissions(copy.folder, fs::perms(0755), fs::perm_options::replace);
  EXPECT_EQ(LoadFailure(copy.library), "");
  fs::remove_all(copy.top);
}

TEST(PluginPermissionsTest, TheBuiltInPluginsPass) {
  ScopedEnv strict(kAllowWritablePluginsVariable, nullptr);
  for (const auto& entry : fs::directory_iterator(BuiltinPluginDirectory())) {
    if (entry.path().extension() == ".so") {
      EXPECT_EQ(UnsafePluginPath(entry.path().string()), "") << entry.path();
    }
  }
}

}  // namespace
}  // namespace memsweep::plugin
