#include "core/model/hf_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace memsweep::model {
namespace {

using nlohmann::json;

// Reads typed values out of one config.json, naming the file and key in every error.
class ConfigReader {
 public:
  ConfigReader(std::string file, const json& root) : file_(std::move(file)), root_(root) {}

  [[noreturn]] void Fail(const std::string& what) const {
    throw ModelConfigError(file_ + ": " + what);
  }

  bool Has(const char* key) const { return root_.contains(key) && !root_.at(key).is_null(); }

  template <typename T>
  void Read(const char* key, T& out) const {
    if (!Has(key)) return;
    out = Get<T>(root_.at(key), key);
  }

  template <typename T>
  T Required(const char* key) const {
    if (!Has(key)) Fail(std::string("\"") + key + "\" is missing; it is needed for the model's shape");
    return Get<T>(root_.at(key), key);
  }

  template <typename T>
  T Get(const json& value, const std::string& key) const {
    if constexpr (std::is_same_v<T, bool>) {
      if (!value.is_boolean()) Fail("\"" + key + "\" must be true or false, found " + value.dump());
    } else if constexpr (std::is_integral_v<T>) {
      if (!value.is_number_integer()) Fail("\"" + key + "\" must be an integer, found " + value.dump());
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!value.is_number()) Fail("\"" + key + "\" must be a number, found " + value.dump());
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!value.is_string()) Fail("\"" + key + "\" must be a string, found " + value.dump());
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      if (!value.is_array()) Fail("\"" + key + "\" must be a list of numbers");
      for (const json& v : value) {
        if (!v.is_number()) Fail("\"" + key + "\" must be a list of numbers, found " + v.dump());
      }
    }
    return value.get<T>();
  }

  const json& root() const { return root_; }

 private:
  std::string file_;
  const json& root_;
};

std::string ConfigFile(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::is_directory(path)) {
    const fs::path file = fs::path(path) / "config.json";
    if (!fs::exists(file)) {
      throw ModelConfigError(path + ": the directory has no config.json (give the model's "
                             "directory or its config.json)");
    }
    return file.string();
  }
  if (!fs::exists(path)) {
    throw ModelConfigError(path + ": no such file (give a Hugging Face model directory or its "
                           "config.json)");
  }
  return path;
}

// The rotary settings: "rope_scaling" beside "rope_theta" (configs written by transformers 4,
// the published ones), or "rope_parameters" holding both (transformers 5).
void ReadRopeScaling(const ConfigReader& r, LlamaConfig& c) {
  const char* key = r.Has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  if (!r.Has(key)) return;
  const json& scaling = r.root().at(key);
  if (!scaling.is_object()) r.Fail(std::string("\"") + key + "\" must be an object or null");
  if (scaling.contains("rope_theta") && !scaling.at("rope_theta").is_null()) {
    c.rope_theta = r.Get<double>(scaling.at("rope_theta"), std::string(key) + ".rope_theta");
  }
  if (scaling.contains("partial_rotary_factor") && !scaling.at("partial_rotary_factor").is_null()) {
    c.partial_rotary_factor = r.Get<double>(scaling.at("partial_rotary_factor"),
                                            std::string(key) + ".partial_rotary_factor");
  }
  std::string type;
  if (scaling.contains("rope_type")) type = r.Get<std::string>(scaling.at("rope_type"), "rope_scaling.rope_type");
  else if (scaling.contains("type")) type = r.Get<std::string>(scaling.at("type"), "rope_scaling.type");
  RopeScaling& out = c.rope_scaling;
  auto number = [&](const char* key, double& value) {
    if (scaling.contains(key) && !scaling.at(key).is_null()) {
      value = r.Get<double>(scaling.at(key), std::string("rope_scaling.") + key);
    }
  };
  if (type == "default" || type.empty()) return;
  if (type == "llama3") {
    out.kind = RopeScaling::Kind::kLlama3;
    number("factor", out.factor);
    number("low_freq_factor", out.low_freq_factor);
    number("high_freq_factor", out.high_freq_factor);
    if (!scaling.contains("original_max_position_embeddings")) {
      r.Fail("rope_scaling (llama3) needs \"original_max_position_embeddings\"");
    }
    out.original_max_position_embeddings = r.Get<int64_t>(
        scaling.at("original_max_position_embeddings"), "rope_scaling.original_max_position_embeddings");
    return;
  }
  if (type == "longrope" || type == "su") {
    out.kind = RopeScaling::Kind::kLongRope;
    for (const char* key : {"short_factor", "long_factor"}) {
      if (!scaling.contains(key)) r.Fail(std::string("rope_scaling (") + type + ") needs \"" + key + "\"");
    }
    out.short_factor = r.Get<std::vector<double>>(scaling.at("short_factor"), "rope_scaling.short_factor");
    out.long_factor = r.Get<std::vector<double>>(scaling.at("long_factor"), "rope_scaling.long_factor");
    number("attention_factor", out.attention_factor);
    // The pretraining length: in the rope object, else the config's own key (phi3), else
    // max_position_embeddings.
    out.original_max_position_embeddings = c.max_position_embeddings;
    r.Read("original_max_position_embeddings", out.original_max_position_embeddings);
    if (scaling.contains("original_max_position_embeddings")) {
      out.original_max_position_embeddings = r.Get<int64_t>(
          scaling.at("original_max_position_embeddings"),
          std::string(key) + ".original_max_position_embeddings");
    }
    return;
  }
  r.Fail(std::string(key) + " type \"" + type + "\" is not supported: memsweep implements \"llama3\" and "
         "\"longrope\" (\"su\"), or none");
}

}  // namespace

const std::vector<std::string>& SupportedModelTypes() {
  static const std::vector<std::string> kTypes = {"llama", "mistral", "qwen2", "phi3"};
  return kTypes;
}

LlamaConfig ReadHuggingFaceConfig(const std::string& path) {
  const std::string file = ConfigFile(path);
  std::ifstream in(file);
  json root;
  try {
    root = json::parse(in);
  } catch (const json::exception& e) {
    throw ModelConfigError(file + ": not valid JSON (" + e.what() + ")");
  }
  if (!root.is_object()) throw ModelConfigError(file + ": not a JSON object");
  const ConfigReader r(file, root);
  LlamaConfig c;
  c.model_type = r.Required<std::string>("model_type");
  const auto& types = SupportedModelTypes();
  if (std::find(types.begin(), types.end(), c.model_type) == types.end()) {
    std::string list;
    for (const auto& t : types) list += (list.empty() ? "" : ", ") + t;
    r.Fail("model_type \"" + c.model_type + "\" is not supported; memsweep trains " + list);
  }
  std::string act = "silu";
  r.Read("hidden_act", act);
  if (act != "silu") r.Fail("hidden_act \"" + act + "\": memsweep's MLP is SwiGLU (\"silu\")");

  c.vocab_size = r.Required<int64_t>("vocab_size");
  c.hidden_size = r.Required<int64_t>("hidden_size");
  c.intermediate_size = r.Required<int64_t>("intermediate_size");
  c.num_hidden_layers = r.Required<int64_t>("num_hidden_layers");
  c.num_attention_heads = r.Required<int64_t>("num_attention_heads");
  c.num_key_value_heads = c.num_attention_heads;
  r.Read("num_key_value_heads", c.num_key_value_heads);
  r.Read("head_dim", c.head_dim);
  r.Read("max_position_embeddings", c.max_position_embeddings);
  r.Read("rms_norm_eps", c.rms_norm_eps);
  r.Read("rope_theta", c.rope_theta);
  r.Read("tie_word_embeddings", c.tie_word_embeddings);
  r.Read("partial_rotary_factor", c.partial_rotary_factor);

  if (c.model_type == "llama") {
    bool attention_bias = false;
    r.Read("attention_bias", attention_bias);
    c.qkv_bias = c.o_bias = attention_bias;
    r.Read("mlp_bias", c.mlp_bias);
  } else if (c.model_type == "qwen2") {
    c.qkv_bias = true;
    bool use_sliding_window = false;
    r.Read("use_sliding_window", use_sliding_window);
    if (use_sliding_window) r.Read("sliding_window", c.sliding_window);
  } else {  // mistral, phi3
    r.Read("sliding_window", c.sliding_window);
  }
  ReadRopeScaling(r, c);
  if (auto problem = c.Problem()) r.Fail(*problem);
  return c;
}

}  // namespace memsweep::model
