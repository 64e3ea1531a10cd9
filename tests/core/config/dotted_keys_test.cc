// Dotted keys as paths into a TOML document: tables, and list entries named by index or by
// their plugin; assigning creates tables on the way and keeps the value's file position.
#include "core/config/dotted_keys.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "core/config/config_error.h"

namespace memsweep::config {
namespace {

toml::table ParseDocument(std::string_view text, std::string_view path) {
  return toml::parse(text, path);
}

const char* kDocument =
    "[optimizer]\nlr = 0.003\n"
    "[plugins]\npaths = [\"a\", \"b\"]\n"
    "[[strategies.callbacks]]\nplugin = \"empty_cache\"\nevery = 10\n"
    "[[strategies.callbacks]]\nplugin = \"grad_clip\"\nmax_norm = 1.0\n"
    "[[strategies.callbacks]]\nplugin = \"grad_clip\"\nmax_norm = 2.0\n";

std::string AssignError(toml::table& root, const std::string& dotted) {
  try {
    AssignAtPath(root, dotted, toml::value<int64_t>(1), {}, "x.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(DottedKeysTest, FindWalksTablesAndListEntriesByIndexOrPlugin) {
  const toml::table root = ParseDocument(kDocument, "x.toml");
  EXPECT_EQ(FindAtPath(root, "optimizer.lr")->value<double>(), 0.003);
  EXPECT_EQ(FindAtPath(root, "plugins.paths.1")->value<std::string>(), "b");
  EXPECT_EQ(FindAtPath(root, "strategies.callbacks.0.every")->value<int64_t>(), 10);
  EXPECT_EQ(FindAtPath(root, "strategies.callbacks.empty_cache.every")->value<int64_t>(), 10);
  EXPECT_EQ(FindAtPath(root, "strategies.callbacks.2.max_norm")->value<double>(), 2.0);
  EXPECT_EQ(FindAtPath(root, "strategies.callbacks.3"), nullptr);           // out of range
  EXPECT_EQ(FindAtPath(root, "strategies.callbacks.grad_clip"), nullptr);   // two of them
  EXPECT_EQ(FindAtPath(root, "strategies.callbacks.nope.every"), nullptr);  // no such plugin
  EXPECT_EQ(FindAtPath(root, "optimizer.lr.x"), nullptr);
  EXPECT_EQ(FindAtPath(root, "model.preset"), nullptr);
}

TEST(DottedKeysTest, AssignCreatesTablesAndChangesListEntriesInPlace) {
  toml::table root = ParseDocument(kDocument, "x.toml");
  toml::table values = ParseDocument("v = 4\nw = 0.5\nu = \"c\"\n", "y.toml");
  AssignAtPath(root, "strategies.callbacks.empty_cache.every", std::move(*values.get("v")), {},
               "x.toml");
  AssignAtPath(root, "strategies.callbacks.1.max_norm", std::move(*values.get("w")), {}, "x.toml");
  AssignAtPath(root, "plugins.paths.0", std::move(*values.get("u")), {}, "x.toml");
  AssignAtPath(root, "model.extra.k", toml::value<int64_t>(7), {}, "x.toml");
  EXPECT_EQ(root["strategies"]["callbacks"][0]["every"].value<int64_t>(), 4);
  EXPECT_EQ(root["strategies"]["callbacks"][1]["max_norm"].value<double>(), 0.5);
  EXPECT_EQ(root["strategies"]["callbacks"][2]["max_norm"].value<double>(), 2.0);
  EXPECT_EQ(root["strategies"]["callbacks"].as_array()->size(), 3u);
  EXPECT_EQ(root["plugins"]["paths"][0].value<std::string>(), "c");
  EXPECT_EQ(root["model"]["extra"]["k"].value<int64_t>(), 7);
  // The moved value keeps its position, for messages about it.
  const toml::source_region& where = root["strategies"]["callbacks"][0]["every"].node()->source();
  EXPECT_EQ(*where.path, "y.toml");
  EXPECT_EQ(where.begin.line, 1u);
}

TEST(DottedKeysTest, AssignErrorsNameTheKeyTheListAndItsEntries) {
  toml::table root = ParseDocument(kDocument, "x.toml");
  EXPECT_EQ(AssignError(root, "optimizer.lr.x"),
            "x.toml: cannot set 'optimizer.lr.x': 'optimizer.lr' is a value, not a table; change "
            "the key");
  EXPECT_EQ(AssignError(root, "strategies.callbacks.3.every"),
            "x.toml: cannot set 'strategies.callbacks.3.every': 'strategies.callbacks' (x.toml:5) "
            "has no entry '3'; its entries are 0 (empty_cache), 1 (grad_clip), 2 (grad_clip): name "
            "one by its index (0 to 2) or by its plugin");
  EXPECT_EQ(AssignError(root, "strategies.callbacks.grad_clip.max_norm"),
            "x.toml: cannot set 'strategies.callbacks.grad_clip.max_norm': 'strategies.callbacks' "
            "(x.toml:5) has several entries with plugin \"grad_clip\": name one by its index (1 or "
            "2)");
  EXPECT_EQ(AssignError(root, "plugins.paths.x"),
            "x.toml: cannot set 'plugins.paths.x': 'plugins.paths' (x.toml:4) has no entry 'x': "
            "name one by its index, 0 to 1");
  toml::table empty = ParseDocument("[strategies]\ncallbacks = []\n", "x.toml");
  EXPECT_EQ(AssignError(empty, "strategies.callbacks.0.every"),
            "x.toml: cannot set 'strategies.callbacks.0.every': 'strategies.callbacks' (x.toml:2) "
            "is an empty list, without an entry '0'; add the entry to the list, or set the whole "
            "list");
  // Where the key came from, when known.
  toml::table keys = ParseDocument("\"strategies.callbacks.9.every\" = 1\n", "m.toml");
  try {
    AssignAtPath(root, "strategies.callbacks.9.every", toml::value<int64_t>(1),
                 keys.begin()->first.source(), "m.toml");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("m.toml:1:1: cannot set 'strategies.callbacks.9.every'", 0),
        0u)
        << e.what();
  }
}

TEST(DottedKeysTest, CanonicalKeyWritesPluginNamesAsIndices) {
  const toml::table root = ParseDocument(kDocument, "x.toml");
  EXPECT_EQ(CanonicalKey(root, "strategies.callbacks.empty_cache.every"),
            "strategies.callbacks.0.every");
  EXPECT_EQ(CanonicalKey(root, "strategies.callbacks.1.max_norm"),
            "strategies.callbacks.1.max_norm");
  EXPECT_EQ(CanonicalKey(root, "strategies.callbacks.grad_clip.max_norm"),
            "strategies.callbacks.grad_clip.max_norm");  // two entries: kept as written
  EXPECT_EQ(CanonicalKey(root, "optimizer.lr"), "optimizer.lr");
  EXPECT_EQ(CanonicalKey(root, "x.y.z"), "x.y.z");
}

}  // namespace
}  // namespace memsweep::config
