#include "core/cli/plugins_command.h"

#include <iostream>

#include "core/cli/command.h"
#include "core/plugin/plugin_registry.h"

namespace memsweep::cli {
namespace {

ExitCode ListPlugins(const PluginsOptions& options) {
  plugin::PluginRegistry& registry = plugin::PluginRegistry::Default();
  for (const auto& path : options.paths) registry.LoadPath(path, "--path");
  for (const auto& slot : SlotNames()) {
    std::cout << slot << "\n";
    const auto plugins = registry.InSlot(slot);
    if (plugins.empty()) std::cout << "  (none)\n";
    for (const auto* lib : plugins) {
      std::cout << "  " << lib->name() << " " << lib->version()
                << (lib->slot_default() ? "  [default]" : "") << "\n";
      if (!lib->description().empty()) std::cout << "    " << lib->description() << "\n";
      for (const auto& p : lib->params()) {
        std::cout << "    " << p.name << " (" << p.type_name << ", "
                  << (p.required ? std::string("required") : "default " + p.default_literal)
                  << ")" << (p.doc.empty() ? "" : ": " + p.doc) << "\n";
      }
      std::cout << "    from " << lib->path() << "\n";
    }
  }
  if (registry.Failures().empty()) return ExitCode::kOk;
  std::cout << "\nfailed to load\n";
  for (const auto& failure : registry.Failures()) {
    std::cout << "  " << failure.path << " (from " << failure.origin << ")\n    ";
    for (char c : failure.reason) {
      std::cout << c;
      if (c == '\n') std::cout << "    ";
    }
    std::cout << "\n";
  }
  // The same rule as for experiments (docs/plugin-guide.md, "Load errors").
  const size_t failed = registry.Failures().size();
  std::cerr << "error: " << failed << (failed == 1 ? " plugin library" : " plugin libraries")
            << " failed to load (listed above): rebuild or remove them, or take them out of "
               "where they were named; experiments refuse to run until then\n";
  return ExitCode::kInvalidInput;
}

}  // namespace

void AddPluginsCommand(CLI::App& app, PluginsOptions& options, ExitCode& exit_code) {
  CLI::App* cmd = app.add_subcommand("plugins", "List the plugins found and any that failed");
  cmd->add_option("--path", options.paths, "Also load this plugin file or directory");
  AddCommand(cmd, exit_code, [&options] { return ListPlugins(options); });
}

}  // namespace memsweep::cli
