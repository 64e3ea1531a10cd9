// Whether a plugin library may be loaded as far as its file permissions go: as ssh does for its
// keys, memsweep loads no code another user could have written or replaced. Refused: a library,
// or the folder it is in, that other users may write (others' write bit, even with the sticky
// bit; or the group's, unless the group is the owner's own private group). Folders further up are
// not checked. MEMSWEEP_ALLOW_WRITABLE_PLUGINS=1 loads such libraries anyway
// (docs/plugin-guide.md, "Load errors").
//
//   if (std::string why = UnsafePluginPath("/tmp/x/attention-mine.so"); !why.empty()) refuse(why);
#pragma once

#include <string>

namespace memsweep::plugin {

inline constexpr const char* kAllowWritablePluginsVariable = "MEMSWEEP_ALLOW_WRITABLE_PLUGINS";

// "" when the library may be loaded; else "<path>: <why>; <what to do>".
std::string UnsafePluginPath(const std::string& library_path);

}  // namespace memsweep::plugin
