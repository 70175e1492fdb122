// Patching a user's Megatron-LM launch script with a plan's parallel flags
// (export/megatron_script_patch.h). The script is edited as text, line by line, so every
// byte outside the edited flags stays as the user wrote it: words are runs of non-blanks, a
// word starting with '#' ends the line's words (a comment), and a word's core is the word
// without the quotes or parentheses around it (`"--sequence-parallel`, `(--bf16`) or the
// array assignment it opens (`ARGS=(--bf16`).
#include "export/megatron_script_patch.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "common/errors.h"
#include "export/export_common.h"
#include "export/megatron_arg_table.h"
#include "export/safe_text.h"

namespace strata::exports {

const std::vector<std::string>& megatron_parallel_flags() {
  static const std::vector<std::string> flags = {
      "--tensor-model-parallel-size", "--pipeline-model-parallel-size",
      "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
      "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
      "--pipeline-model-parallel-layout", "--account-for-embedding-in-pipeline-split",
      "--account-for-loss-in-pipeline-split", "--context-parallel-size", "--cp-comm-type",
      "--expert-model-parallel-size", "--expert-tensor-parallel-size",
      // How expert parallelism exchanges tokens: the all-to-all the plan's prediction charged.
      "--moe-token-dispatcher-type", "--sequence-parallel",
      "--use-tp-pp-dp-mapping", "--micro-batch-size", "--global-batch-size",
      "--recompute-granularity", "--recompute-method", "--recompute-num-layers",
      "--recompute-modules", "--recompute-activations", "--use-distributed-optimizer", "--use-megatron-fsdp",
      "--data-parallel-sharding-strategy", "--overlap-grad-reduce", "--overlap-param-gather",
      "--tp-comm-overlap"};
  return flags;
}

namespace {

// Flags the patch owns only when the plan's export writes them (Megatron-FSDP's
// requirements, the iteration count of --train-tokens); otherwise the user's stay.
const std::set<std::string>& owned_when_written() {
  static const std::set<std::string> s = {"--no-gradient-accumulation-fusion", "--ckpt-format",
                                          "--train-iters"};
  return s;
}

// Flags without a value among the owned ones.
bool takes_no_value(const std::string& f) {
  static const std::set<std::string> s = {
      "--sequence-parallel", "--use-tp-pp-dp-mapping", "--recompute-activations",
      "--use-distributed-optimizer", "--use-megatron-fsdp", "--overlap-grad-reduce",
      "--overlap-param-gather", "--tp-comm-overlap", "--no-gradient-accumulation-fusion"};
  return s.count(f) > 0;
}

// Model-shape flags compared with the plan's when the script writes a plain number.
const std::vector<std::string>& model_shape_flags() {
  static const std::vector<std::string> f = {
      "--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
      "--num-query-groups", "--seq-length", "--num-experts", "--moe-router-topk",
      "--moe-ffn-hidden-size"};
  return f;
}

struct Word {
  std::size_t begin = 0, end = 0;            // the word in its line
  std::size_t core_begin = 0, core_end = 0;  // without surrounding quotes / parentheses
};

std::vector<Word> words_of(const std::string& line) {
  std::vector<Word> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size() || line[i] == '#') break;
    Word w;
    w.begin = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    w.end = i;
    w.core_begin = w.begin;
    w.core_end = w.end;
    // An array that opens on the flag's line: `ARGS=(--tensor-model-parallel-size`.
    const std::string text = line.substr(w.begin, w.end - w.begin);
    if (const auto open = text.find("=("); open != std::string::npos && open > 0 &&
        std::all_of(text.begin(), text.begin() + open, [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
      w.core_begin = w.begin + open + 2;
    while (w.core_begin < w.core_end && std::string("\"'(").find(line[w.core_begin]) != std::string::npos)
      ++w.core_begin;
    while (w.core_end > w.core_begin && std::string("\"')").find(line[w.core_end - 1]) != std::string::npos)
      --w.core_end;
    out.push_back(w);
  }
  return out;
}

std::string core(const std::string& line, const Word& w) {
  return line.substr(w.core_begin, w.core_end - w.core_begin);
}

bool ends_with_continuation(const std::string& line) {
  const auto last = line.find_last_not_of(" \t");
  return last != std::string::npos && line[last] == '\\';
}

// One owned flag found in the script.
struct Found {
  std::size_t line = 0;
  std::size_t flag_word = 0;
  std::optional<std::size_t> value_word;  // the next word, for flags that take a value
  std::size_t value_begin = 0, value_end = 0;  // the value's text in the line
  std::string name, value;
  // Set when removed: the edit that removes it, and the blanks it took either side.
  std::optional<std::size_t> removal;
  bool took_before = false, took_after = false;
};

struct Edit {
  std::size_t begin, end;
  std::string text;
};

class Patcher {
 public:
  Patcher(const std::string& script, const std::string& source, const std::vector<Arg>& plan_args)
      : source_(source) {
    std::size_t start = 0;
    while (start <= script.size()) {
      const std::size_t nl = script.find('\n', start);
      if (nl == std::string::npos) {
        if (start < script.size()) lines_.push_back(script.substr(start));
        final_newline_ = script.empty() || script.back() == '\n';
        break;
      }
      lines_.push_back(script.substr(start, nl - start));
      start = nl + 1;
    }
    words_.resize(lines_.size());
    for (std::size_t i = 0; i < lines_.size(); ++i) words_[i] = words_of(lines_[i]);
    for (const auto& [flag, value] : plan_args) all_plan_[flag] = value;
    const auto& owned = megatron_parallel_flags();
    for (const auto& [flag, value] : plan_args)
      if (std::find(owned.begin(), owned.end(), flag) != owned.end() || owned_when_written().count(flag))
        plan_.emplace_back(flag, value);
    edits_.resize(lines_.size());
    after_.resize(lines_.size());
  }

  ScriptPatch run() {
    find_flags();
    for (Found& f : found_) edit(f);
    add_missing();
    return {render(), changes_};
  }

 private:
  std::string where(std::size_t line) const { return fmt::format("{}:{}", source_, line + 1); }

  bool owned(const std::string& name) const {
    const auto& o = megatron_parallel_flags();
    if (std::find(o.begin(), o.end(), name) != o.end()) return true;
    return owned_when_written().count(name) && plan_value(name).has_value();
  }
  std::optional<std::string> plan_value(const std::string& name) const {
    for (const auto& [f, v] : plan_)
      if (f == name) return v;
    return std::nullopt;
  }

  // Every owned flag, and the model-shape check.
  void find_flags() {
    for (std::size_t l = 0; l < lines_.size(); ++l) {
      const auto& ws = words_[l];
      for (std::size_t w = 0; w < ws.size(); ++w) {
        const std::string word = core(lines_[l], ws[w]);
        if (word.rfind("--", 0) != 0) continue;
        const auto eq = word.find('=');
        Found f;
        f.line = l;
        f.flag_word = w;
        f.name = word.substr(0, eq);
        // Megatron-LM's validate_args (arguments.py at d98e8a64) asserts iteration-based
        // training has no sample-based settings: --train-iters cannot join --train-samples.
        if (f.name == "--train-samples" && plan_value("--train-iters"))
          input_error("{}: the script trains by samples (--train-samples); --train-tokens writes "
                      "--train-iters, which Megatron-LM refuses beside sample-based settings: "
                      "leave out --train-tokens",
                      where(l));
        const bool model = std::find(model_shape_flags().begin(), model_shape_flags().end(),
                                     f.name) != model_shape_flags().end();
        if (!owned(f.name) && !model) continue;
        if (eq != std::string::npos) {
          f.value_begin = ws[w].core_begin + eq + 1;
          f.value_end = ws[w].core_end;
        } else if (!takes_no_value(f.name)) {
          const bool value_here = w + 1 < ws.size() && core(lines_[l], ws[w + 1]) != "\\";
          if (!value_here && model) continue;  // nothing to compare on this line
          if (!value_here)
            input_error("{}: {} has its value on another line; put the value on the flag's line "
                        "so the plan's can replace it", where(l), f.name);
          // A list argument (nargs) takes the words up to the next flag on its line.
          std::size_t last = w + 1;
          if (megatron_arg_arity(f.name) == MegatronArity::Many)
            while (last + 1 < ws.size() && core(lines_[l], ws[last + 1]) != "\\" &&
                   core(lines_[l], ws[last + 1]).rfind("-", 0) != 0)
              ++last;
          f.value_word = last;
          f.value_begin = ws[w + 1].core_begin;
          f.value_end = ws[last].core_end;
          for (std::size_t v = w + 1; v <= last; ++v) f.value += (v > w + 1 ? " " : "") + core(lines_[l], ws[v]);
        }
        if (f.value.empty()) f.value = lines_[l].substr(f.value_begin, f.value_end - f.value_begin);
        if (model) {
          check_model(f);
          continue;
        }
        found_.push_back(f);
      }
    }
  }

  void check_model(const Found& f) const {
    const auto it = all_plan_.find(f.name);
    const bool number = !f.value.empty() &&
                        std::all_of(f.value.begin(), f.value.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (it == all_plan_.end() || !number || it->second == f.value) return;
    input_error("{}: {} {} but the plan's model has {}: the plan is for another model",
                where(f.line), f.name, f.value, it->second);
  }

  // The owned flag's value replaced by the plan's, or the flag removed.
  void edit(Found& f) {
    const std::string& line = lines_[f.line];
    if (const auto v = plan_value(f.name)) {
      if (takes_no_value(f.name) || *v == f.value) return;
      const bool list = megatron_arg_arity(f.name) == MegatronArity::Many;
      const bool quoted = !list && f.value_begin > 0 && (line[f.value_begin - 1] == '"' || line[f.value_begin - 1] == '\'');
      edits_[f.line].push_back({f.value_begin, f.value_end, quoted ? *v : arg_value_words(f.name, *v)});
      changes_.push_back(fmt::format("{}: {} {} -> {}", where(f.line), f.name, f.value, *v));
      return;
    }
    const auto& ws = words_[f.line];
    const Word& first = ws[f.flag_word];
    const Word& last = ws[f.value_word.value_or(f.flag_word)];
    std::size_t begin = first.core_begin, end = last.core_end;
    if (last.core_end == last.end) {
      while (end < line.size() && (line[end] == ' ' || line[end] == '\t')) ++end;
      f.took_after = end > last.core_end;
    } else if (first.core_begin == first.begin) {
      while (begin > 0 && (line[begin - 1] == ' ' || line[begin - 1] == '\t')) --begin;
      f.took_before = begin < first.core_begin;
    }
    f.removal = edits_[f.line].size();
    edits_[f.line].push_back({begin, end, ""});
    changes_.push_back(fmt::format("{}: removed {}{}", where(f.line), f.name,
                                   f.value.empty() ? "" : " " + f.value));
    removed_.insert(f.line);
  }

  // The line holds only this flag (and its value, and a trailing `\`).
  bool own_line(const Found& f) const {
    const auto& ws = words_[f.line];
    std::size_t n = ws.size();
    if (n > 0 && core(lines_[f.line], ws[n - 1]) == "\\") --n;
    return f.flag_word == 0 && n == (f.value_word ? 2u : 1u);
  }

  void add_missing() {
    std::vector<Arg> missing;
    for (const Arg& arg : plan_)
      if (std::none_of(found_.begin(), found_.end(), [&](const Found& f) { return f.name == arg.first; }))
        missing.push_back(arg);
    if (missing.empty()) return;
    std::optional<Found> anchor;
    for (const Found& f : found_)
      if (plan_value(f.name)) anchor = f;  // the last one kept
    if (!anchor && !found_.empty()) anchor = found_.back();
    if (!anchor) anchor = training_script();
    for (const auto& [flag, value] : missing)
      changes_.push_back(fmt::format("{}: added {}{}", where(anchor->line), flag,
                                     value.empty() ? "" : " " + arg_value_words(flag, value)));
    const std::string& line = lines_[anchor->line];
    if (!own_line(*anchor)) {
      std::string text;
      for (const auto& [flag, value] : missing)
        text += (text.empty() ? "" : " ") + flag + (value.empty() ? "" : " " + arg_value_words(flag, value));
      if (anchor->removal) {  // in the removed flag's place
        edits_[anchor->line][*anchor->removal].text =
            (anchor->took_before ? " " : "") + text + (anchor->took_after ? " " : "");
        return;
      }
      const std::size_t at = anchor->value_word || anchor->value_end > 0
                                 ? anchor->value_end
                                 : words_[anchor->line][anchor->flag_word].core_end;
      edits_[anchor->line].push_back({at, at, " " + text});
      return;
    }
    // One flag per line, continuing the anchor's style: its indentation, and a `\` on every
    // line that a following line continues.
    const std::string indent = line.substr(0, line.find_first_not_of(" \t"));
    const bool continued = ends_with_continuation(line);
    const bool last_of_command = !continued && anchor->line > 0 && ends_with_continuation(lines_[anchor->line - 1]);
    if (last_of_command && !removed_.count(anchor->line)) edits_[anchor->line].push_back({line.size(), line.size(), " \\"});
    for (std::size_t i = 0; i < missing.size(); ++i) {
      const auto& [flag, value] = missing[i];
      const bool more = i + 1 < missing.size();
      after_[anchor->line].push_back(indent + flag + (value.empty() ? "" : " " + arg_value_words(flag, value)) +
                                     (continued || (last_of_command && more) ? " \\" : ""));
    }
  }

  // Where flags go in a script that has none of the owned ones: after the *.py word.
  Found training_script() const {
    for (std::size_t l = 0; l < lines_.size(); ++l)
      for (std::size_t w = 0; w < words_[l].size(); ++w) {
        const std::string c = core(lines_[l], words_[l][w]);
        if (c.size() > 3 && c.compare(c.size() - 3, 3, ".py") == 0) {
          Found f;
          f.line = l;
          f.flag_word = w;
          f.value_end = words_[l][w].core_end;
          return f;
        }
      }
    input_error("{}: holds no Megatron-LM parallel flag and no *.py training script to place the "
                "plan's flags by", source_);
  }

  std::string render() {
    std::vector<std::string> out_lines;
    for (std::size_t l = 0; l < lines_.size(); ++l) {
      std::string line = lines_[l];
      auto& es = edits_[l];
      std::sort(es.begin(), es.end(), [](const Edit& a, const Edit& b) { return a.begin > b.begin; });
      for (const Edit& e : es) line.replace(e.begin, e.end - e.begin, e.text);
      // A line whose flags were all removed goes, unless something is placed after it.
      const auto rest = line.find_first_not_of(" \t\\");
      if (removed_.count(l) && rest == std::string::npos) {
        if (!after_[l].empty()) {
          for (const auto& a : after_[l]) out_lines.push_back(a);
          continue;
        }
        // The last line of a `\`-continued command: the line before now ends the command.
        if (!ends_with_continuation(lines_[l]) && !out_lines.empty() && ends_with_continuation(out_lines.back())) {
          std::string& prev = out_lines.back();
          prev.resize(prev.find_last_not_of(" \t\\") + 1);
        }
        continue;
      }
      out_lines.push_back(line);
      for (const auto& a : after_[l]) out_lines.push_back(a);
    }
    std::string out;
    for (std::size_t i = 0; i < out_lines.size(); ++i)
      out += out_lines[i] + (i + 1 < out_lines.size() || final_newline_ ? "\n" : "");
    return out;
  }

  std::string source_;
  std::vector<std::string> lines_;
  bool final_newline_ = true;
  std::vector<std::vector<Word>> words_;
  std::map<std::string, std::string> all_plan_;
  std::vector<Arg> plan_;  // the owned flags of the plan, in its order
  std::vector<Found> found_;
  std::vector<std::vector<Edit>> edits_;
  std::vector<std::vector<std::string>> after_;
  std::set<std::size_t> removed_;
  std::vector<std::string> changes_;
};

}  // namespace

ScriptPatch patch_megatron_script(const std::string& script, const std::string& source,
                                  const std::vector<Arg>& plan_args) {
  return Patcher(script, source, plan_args).run();
}

}  // namespace strata::exports
