#include "core/cli/plugins_command.h"

#include <iostream>

#include "core/plugin/plugin_registry.h"

namespace memsweep::cli {
namespace {

int ListPlugins(const PluginsOptions& options) {
  plugin::PluginRegistry& registry = plugin::PluginRegistry::Default();
  for (const auto& path : options.paths) registry.LoadPath(path);
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
  if (!registry.Failures().empty()) {
    std::cout << "\nfailed to load\n";
    for (const auto& failure : registry.Failures()) {
      std::cout << "  " << failure.path << "\n    ";
      for (char c : failure.reason) {
        std::cout << c;
        if (c == '\n') std::cout << "    ";
      }
      std::cout << "\n";
    }
  }
  return 0;
}

}  // namespace

void AddPluginsCommand(CLI::App& app, PluginsOptions& options, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("plugins", "List the plugins found and any that failed");
  cmd->add_option("--path", options.paths, "Also load this plugin file or directory");
  cmd->callback([&options, &exit_code] { exit_code = ListPlugins(options); });
}

}  // namespace memsweep::cli
