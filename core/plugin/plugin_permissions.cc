#include "core/plugin/plugin_permissions.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace memsweep::plugin {
namespace {

namespace fs = std::filesystem;

std::string Mode(mode_t mode) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "%04o", static_cast<unsigned>(mode & 07777));
  return buffer;
}

// A group only its owner is in: named as the owner and with no other members listed (Debian's
// user private groups), so that its write bit lets no one else write.
bool PrivateGroupOf(const struct stat& info) {
  const struct passwd* owner = getpwuid(info.st_uid);
  const struct group* group = getgrgid(info.st_gid);
  if (owner == nullptr || group == nullptr) return false;
  if (std::string_view(owner->pw_name) != group->gr_name) return false;
  for (char** member = group->gr_mem; member != nullptr && *member != nullptr; ++member) {
    if (std::string_view(*member) != owner->pw_name) return false;
  }
  return true;
}

// Why others may write `path` (a file or the folder holding the library), or "".
std::string OthersMayWrite(const struct stat& info) {
  if ((info.st_mode & S_IWOTH) != 0) return "any user may write it";
  if ((info.st_mode & S_IWGRP) != 0 && !PrivateGroupOf(info)) {
    const struct group* group = getgrgid(info.st_gid);
    return "the users of group " + (group ? std::string(group->gr_name) : std::to_string(info.st_gid)) +
           " may write it";
  }
  return "";
}

}  // namespace

std::string UnsafePluginPath(const std::string& library_path) {
  if (const char* allow = std::getenv(kAllowWritablePluginsVariable); allow && std::string(allow) == "1") {
    return "";
  }
  std::error_code error;
  const fs::path library = fs::absolute(library_path, error);
  const std::string advice = "; memsweep loads no plugin another user could have replaced: "
                             "chmod go-w it, or set " + std::string(kAllowWritablePluginsVariable) +
                             "=1 to load it anyway";
  // The library itself (through symbolic links: what would be loaded) and its folder.
  const fs::path target = fs::canonical(library, error);
  if (error) return "";  // a missing file is reported by the loader
  struct stat info {};
  for (const fs::path& checked : {target, target.parent_path()}) {
    if (stat(checked.c_str(), &info) != 0) continue;
    if (std::string why = OthersMayWrite(info); !why.empty()) {
      return library_path + ": " + (checked == target ? "the library" : "its folder " + checked.string()) +
             " (mode " + Mode(info.st_mode) + ") is not safe: " + why + advice;
    }
  }
  return "";
}

}  // namespace memsweep::plugin
