#include "core/data/bpe_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <mutex>

namespace memsweep::data {
namespace {

using nlohmann::json;

constexpr size_t kLongestCachedWord = 255;  // bytes

uint64_t PairKey(int32_t left, int32_t right) {
  return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
}

// GPT-2's pre-tokenizer regex (ByteLevel with use_regex = true).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// GPT-2's byte-level alphabet: every byte as a printable code point (bytes_to_unicode).
const std::vector<std::string>& ByteAlphabet() {
  static const std::vector<std::string> kAlphabet = [] {
    std::vector<int> printable;
    for (int b = '!'; b <= '~'; ++b) printable.push_back(b);
    for (int b = 0xA1; b <= 0xAC; ++b) printable.push_back(b);
    for (int b = 0xAE; b <= 0xFF; ++b) printable.push_back(b);
    std::vector<std::string> alphabet(256);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool kept = std::find(printable.begin(), printable.end(), b) != printable.end();
      AppendUtf8(alphabet[b], kept ? static_cast<uint32_t>(b) : 256u + extra++);
    }
    return alphabet;
  }();
  return kAlphabet;
}

// `\s` and `\S` as Unicode White_Space, which is what Oniguruma (Hugging Face's regex engine)
// matches; PCRE2's UCP `\s` also takes U+180E.
std::string WithUnicodeWhiteSpace(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      if (next == 's') out += "\\p{White_Space}";
      else if (next == 'S') out += "\\P{White_Space}";
      else out += pattern.substr(i, 2);
      ++i;
      continue;
    }
    out += pattern[i];
  }
  return out;
}

}  // namespace

struct BpeTokenizer::Regex {
  pcre2_code* code = nullptr;
  pcre2_match_data* match = nullptr;
  std::mutex mutex;  // one Encode at a time: `match` and `words` are shared state
  std::unordered_map<std::string, std::vector<int32_t>> words;  // the word cache
  ~Regex() {
    if (match != nullptr) pcre2_match_data_free(match);
    if (code != nullptr) pcre2_code_free(code);
  }
};

BpeTokenizer::BpeTokenizer() = default;
BpeTokenizer::~BpeTokenizer() = default;
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;

// A function-try-block: a JSON value of an unexpected type anywhere (a string where a flag is, a
// number for the whole file) is the file's problem, reported as such.
BpeTokenizer BpeTokenizer::Load(const std::string& path) try {
  const auto fail = [&](const std::string& what) { return TokenizerError(path + ": " + what); };
  std::ifstream in(path);
  if (!in) throw fail("cannot open (give a Hugging Face tokenizer.json)");
  json root;
  try {
    root = json::parse(in);
  } catch (const json::exception& e) {
    throw fail(std::string("not valid JSON (") + e.what() + ")");
  }
  if (!root.is_object()) throw fail("not a JSON object (give a Hugging Face tokenizer.json)");
  BpeTokenizer t;
  t.path_ = path;
  const json& model = root.value("model", json());
  if (!model.is_object() || model.value("type", "") != "BPE") {
    throw fail("model type \"" + (model.is_object() ? model.value("type", "?") : "?") +
               "\": memsweep reads byte-level BPE tokenizers (Llama-3, Qwen2, Phi-4); "
               "SentencePiece models are not supported yet");
  }
  if (model.value("byte_fallback", false)) {
    throw fail(
        "byte_fallback BPE (a tokenizer converted from SentencePiece, as Llama-2's and "
        "Mistral's are) is not read from tokenizer.json: name the model's tokenizer.model");
  }
  if (!model.value("dropout", json()).is_null() && model.value("dropout", 0.0) != 0.0) {
    throw fail("BPE dropout is not supported (training data must tokenize deterministically)");
  }
  t.ignore_merges_ = model.value("ignore_merges", false);
  const json& normalizer = root.value("normalizer", json());
  if (normalizer.is_object() && normalizer.value("type", "") == "NFC") {
    t.nfc_ = true;
  } else if (!normalizer.is_null()) {
    throw fail("normalizer " + normalizer.value("type", std::string("?")) +
               " is not supported (memsweep reads none, or NFC as Qwen2's)");
  }
  for (const auto& [token, id] : model.at("vocab").items()) {
    t.vocab_[token] = id.get<int32_t>();
    t.vocab_size_ = std::max<int64_t>(t.vocab_size_, id.get<int64_t>() + 1);
  }
  for (const std::string& symbol : ByteAlphabet()) {
    if (t.vocab_.count(symbol) == 0) throw fail("the vocabulary lacks a byte-level symbol");
  }
  int32_t rank = 0;
  t.merges_.reserve(model.at("merges").size());
  for (const json& merge : model.at("merges")) {
    std::string a, b;
    if (merge.is_string()) {
      const std::string text = merge.get<std::string>();
      const size_t space = text.find(' ');
      if (space == std::string::npos) throw fail("merge \"" + text + "\" is not \"a b\"");
      a = text.substr(0, space);
      b = text.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2) {
      a = merge[0].get<std::string>();
      b = merge[1].get<std::string>();
    } else {
      throw fail("a merge is neither \"a b\" nor [\"a\", \"b\"]");
    }
    const auto ia = t.vocab_.find(a), ib = t.vocab_.find(b), ic = t.vocab_.find(a + b);
    if (ia == t.vocab_.end() || ib == t.vocab_.end() || ic == t.vocab_.end()) {
      throw fail("merge \"" + a + " " + b + "\" names a token missing from the vocabulary");
    }
    t.merges_.emplace(PairKey(ia->second, ib->second), std::make_pair(rank++, ic->second));
  }
  for (const json& added : root.value("added_tokens", json::array())) {
    if (added.value("lstrip", false) || added.value("rstrip", false) ||
        added.value("single_word", false)) {
      throw fail("added token \"" + added.value("content", std::string()) +
                 "\" uses lstrip/rstrip/single_word, which memsweep does not implement");
    }
    const std::string content = added.at("content").get<std::string>();
    const int32_t id = added.at("id").get<int32_t>();
    t.added_.emplace_back(content, id);
    if (!content.empty()) t.added_first_byte_[static_cast<uint8_t>(content[0])] = true;
    t.vocab_size_ = std::max<int64_t>(t.vocab_size_, int64_t{id} + 1);
  }
  std::sort(t.added_.begin(), t.added_.end(),
            [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });

  // The pre-tokenizer: its regex.
  std::string pattern;
  const json& pre = root.value("pre_tokenizer", json());
  const auto byte_level = [&](const json& p) {
    if (p.value("add_prefix_space", false)) throw fail("ByteLevel add_prefix_space is not supported");
    return p.value("use_regex", true);
  };
  if (pre.is_object() && pre.value("type", "") == "ByteLevel") {
    if (!byte_level(pre)) throw fail("ByteLevel without its regex and without a Split before it");
    pattern = kGpt2Pattern;
  } else if (pre.is_object() && pre.value("type", "") == "Sequence" &&
             pre.at("pretokenizers").size() == 2 &&
             pre.at("pretokenizers")[0].value("type", "") == "Split" &&
             pre.at("pretokenizers")[1].value("type", "") == "ByteLevel") {
    const json& split = pre.at("pretokenizers")[0];
    if (split.value("behavior", "") != "Isolated" || split.value("invert", false) ||
        !split.at("pattern").contains("Regex")) {
      throw fail("only a Split with a Regex pattern, behavior \"Isolated\", is supported");
    }
    if (byte_level(pre.at("pretokenizers")[1])) {
      throw fail("ByteLevel after Split must have use_regex = false");
    }
    pattern = split.at("pattern").at("Regex").get<std::string>();
  } else {
    throw fail("pre_tokenizer " + (pre.is_object() ? pre.dump().substr(0, 80) : "null") +
               ": memsweep supports ByteLevel, or Split(regex, Isolated) then ByteLevel");
  }
  pattern = WithUnicodeWhiteSpace(pattern);
  t.regex_ = std::make_unique<Regex>();
  int error = 0;
  PCRE2_SIZE offset = 0;
  t.regex_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), pattern.size(),
                                 PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (t.regex_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    throw fail("the pre-tokenizer regex does not compile at offset " + std::to_string(offset) +
               ": " + reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(t.regex_->code, PCRE2_JIT_COMPLETE);  // faster where available
  t.regex_->match = pcre2_match_data_create_from_pattern(t.regex_->code, nullptr);
  return t;
} catch (const json::exception& e) {
  throw TokenizerError(path + ": not a tokenizer.json memsweep can read (" + e.what() + ")");
}

int32_t BpeTokenizer::TokenId(const std::string& token) const {
  for (const auto& [content, id] : added_) {
    if (content == token) return id;
  }
  const auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

int64_t BpeTokenizer::VocabSize() const { return vocab_size_; }

std::vector<int32_t> BpeTokenizer::Encode(std::string_view text) const {
  const std::lock_guard<std::mutex> lock(regex_->mutex);
  std::vector<int32_t> out;
  size_t segment = 0;
  for (size_t i = 0; i < text.size();) {
    if (!added_first_byte_[static_cast<uint8_t>(text[i])]) {  // no added token starts here
      ++i;
      continue;
    }
    bool matched = false;
    for (const auto& [content, id] : added_) {
      if (!content.empty() && text.compare(i, content.size(), content) == 0) {
        EncodeSegment(text.substr(segment, i - segment), out);
        out.push_back(id);
        i += content.size();
        segment = i;
        matched = true;
        break;
      }
    }
    if (!matched) ++i;
  }
  EncodeSegment(text.substr(segment), out);
  return out;
}

void BpeTokenizer::EncodeSegment(std::string_view raw, std::vector<int32_t>& out) const {
  std::string normalized;
  if (nfc_ && !raw.empty()) {  // Unicode NFC (ICU), as the tokenizer's normalizer asks
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
    if (U_FAILURE(status)) throw TokenizerError(path_ + ": ICU has no NFC normalizer");
    const icu::UnicodeString in = icu::UnicodeString::fromUTF8(
        icu::StringPiece(raw.data(), static_cast<int32_t>(raw.size())));
    nfc->normalize(in, status).toUTF8String(normalized);
    if (U_FAILURE(status)) throw TokenizerError(path_ + ": NFC normalization failed");
    raw = normalized;
  }
  const std::string_view text = raw;
  // Isolated split: every match is a piece, and so is every stretch between matches.
  const auto emit = [&](size_t begin, size_t end) {
    if (end <= begin) return;
    std::string word;
    for (size_t k = begin; k < end; ++k) word += ByteAlphabet()[static_cast<uint8_t>(text[k])];
    EncodeWord(word, out);
  };
  size_t start = 0, gap = 0;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  while (start < text.size()) {
    const int rc = pcre2_match(regex_->code, subject, text.size(), start, 0, regex_->match, nullptr);
    if (rc < 0) break;  // no further match
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(regex_->match);
    const size_t begin = ovector[0], end = ovector[1];
    if (end == begin) {  // an empty match: step over one UTF-8 character
      start = begin + 1;
      while (start < text.size() && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) ++start;
      continue;
    }
    emit(gap, begin);
    emit(begin, end);
    gap = start = end;
  }
  emit(gap, text.size());
}

void BpeTokenizer::EncodeWord(const std::string& word, std::vector<int32_t>& out) const {
  const auto cached = regex_->words.find(word);
  if (cached != regex_->words.end()) {
    out.insert(out.end(), cached->second.begin(), cached->second.end());
    return;
  }
  const size_t first = out.size();
  MergeWord(word, out);
  if (word.size() <= kLongestCachedWord && regex_->words.size() < kWordCacheCapacity) {
    regex_->words.emplace(word, std::vector<int32_t>(out.begin() + first, out.end()));
  }
}

void BpeTokenizer::MergeWord(const std::string& word, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    const auto whole = vocab_.find(word);
    if (whole != vocab_.end()) {
      out.push_back(whole->second);
      return;
    }
  }
  // One symbol per byte-level character (each is in the vocabulary), then merges by rank.
  std::vector<int32_t> symbols;
  for (size_t k = 0; k < word.size();) {
    size_t length = 1;
    const auto lead = static_cast<uint8_t>(word[k]);
    if (lead >= 0xE0) length = 3;
    else if (lead >= 0xC0) length = 2;
    symbols.push_back(vocab_.at(word.substr(k, length)));
    k += length;
  }
  while (symbols.size() > 1) {
    int32_t best_rank = std::numeric_limits<int32_t>::max();
    int32_t merged = -1;
    std::pair<int32_t, int32_t> best;
    for (size_t k = 0; k + 1 < symbols.size(); ++k) {
      const auto found = merges_.find(PairKey(symbols[k], symbols[k + 1]));
      if (found != merges_.end() && found->second.first < best_rank) {
        best_rank = found->second.first;
        merged = found->second.second;
        best = {symbols[k], symbols[k + 1]};
      }
    }
    if (merged < 0) break;
    // Every occurrence of the best pair, left to right, as Hugging Face's BPE merges them.
    size_t kept = 0;
    for (size_t k = 0; k < symbols.size(); ++k) {
      if (k + 1 < symbols.size() && symbols[k] == best.first && symbols[k + 1] == best.second) {
        symbols[kept++] = merged;
        ++k;
      } else {
        symbols[kept++] = symbols[k];
      }
    }
    symbols.resize(kept);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
}

}  // namespace memsweep::data
