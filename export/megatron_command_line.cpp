// The words of a Megatron-LM command line: shell words, the launcher prefix before the
// training script, and the flags after it with their values (export/import_megatron.cpp reads
// the modelled ones into the job). Flag names: Megatron-LM main at d98e8a64.
#include "export/megatron_command_line.h"

#include <algorithm>
#include <charconv>
#include <climits>

#include "common/checked_math.h"
#include "common/errors.h"
#include "export/megatron_arg_table.h"
#include "export/megatron_flags.h"
#include "export/safe_text.h"

namespace strata::exports {

std::vector<std::string> shell_words(const std::string& text, const std::string& source) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] == '\n') { ++i; continue; }                       // continuation
      if (text[i + 1] == '\r' && i + 2 < text.size() && text[i + 2] == '\n') { i += 2; continue; }
      cur += text[++i];
      in_word = true;
    } else if (c == '\'' || c == '"') {
      const std::size_t end = text.find(c, i + 1);
      if (end == std::string::npos)
        input_error("{}: unterminated {} quote", source, c == '\'' ? "single" : "double");
      cur += text.substr(i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (c == '#' && !in_word) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(cur);
  return words;
}

std::int64_t flag_positive_int(const std::string& flag, const std::string& v, const std::string& source) {
  std::int64_t out = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size() || out < 1)
    input_error("{}: {} '{}' is not a positive integer", source, flag, one_line(v));
  return out;
}

std::size_t read_launcher(const std::vector<std::string>& words, ImportedJob& job,
                          const std::string& source) {
  std::size_t i = 0;
  const bool has_script = std::any_of(words.begin(), words.end(), [](const std::string& w) {
    return w.size() > 3 && w.compare(w.size() - 3, 3, ".py") == 0;
  });
  if (has_script) {
    std::int64_t nnodes = 0, per_node = 0;
    for (; i < words.size(); ++i) {
      const std::string& w = words[i];
      if (w.size() > 3 && w.compare(w.size() - 3, 3, ".py") == 0) { ++i; break; }
      std::string key = w, value;
      if (const auto eq = w.find('='); eq != std::string::npos && w.rfind("--", 0) == 0) {
        key = w.substr(0, eq);
        value = w.substr(eq + 1);
      }
      std::replace(key.begin(), key.end(), '_', '-');
      if (key == "--nnodes" || key == "--nproc-per-node") {
        if (value.empty() && i + 1 < words.size()) value = words[++i];
        if (value.find(':') != std::string::npos)
          input_error("{}: torchrun {} '{}' is an elastic range; strata needs a fixed world size "
                      "(or pass --gpus)", source, key, one_line(value));
        if (value == "gpu" || value == "auto") continue;  // per-node count from the machine
        (key == "--nnodes" ? nnodes : per_node) = flag_positive_int("torchrun " + key, value, source);
      }
    }
    if (nnodes > 0 && per_node > 0) {
      const std::int64_t world = checked_mul(nnodes, per_node, "torchrun --nnodes x --nproc_per_node");
      if (world > INT_MAX)
        input_error("{}: torchrun world size {} exceeds {} GPUs", source, world, INT_MAX);
      job.world_size = static_cast<int>(world);
    }
  }
  return i;
}

std::map<std::string, std::string> read_flags(const std::vector<std::string>& words, std::size_t i,
                                              ImportedJob& job, const std::string& source) {
  std::map<std::string, std::string> v;  // modelled flag -> value ("" for a flag)
  std::vector<std::string> refused, unknown;  // not modelled; not Megatron-LM flags at the table's commit
  for (; i < words.size(); ++i) {
    std::string flag = words[i], value;
    bool inline_value = false;
    if (flag.rfind("--", 0) != 0)
      input_error("{}: '{}' is not a flag (expected --name [value] after the script)", source,
                  one_line(flag));
    if (const auto eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      inline_value = true;
    }
    const auto it = megatron_modelled_flags().find(flag);
    if (it == megatron_modelled_flags().end()) {
      // Skip its values by Megatron-LM's own arity: none after a store_true flag, one after
      // an int/str flag (a second word is then no flag and is named), every word up to the
      // next flag for nargs lists (--rampup-batch-size 16 16 5859375, a weighted
      // --data-path) and for flags the table does not know (another version's).
      const std::optional<MegatronArity> arity = megatron_arg_arity(flag);
      const bool has_value = !inline_value && i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0;
      if (arity == MegatronArity::None && (inline_value || has_value))
        input_error("{}: {} takes no value in Megatron-LM (a store_true flag at {}), so '{}' is not its value",
                    source, flag, megatron_arg_table_commit().substr(0, 8),
                    one_line(inline_value ? value : words[i + 1]));
      if (arity == MegatronArity::One && has_value) ++i;
      else if (arity != MegatronArity::None)
        while (!inline_value && i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0) ++i;
      if (megatron_operational_flag(flag)) job.ignored.push_back(flag);
      else if (arity) refused.push_back(flag);
      else unknown.push_back(flag);
      continue;
    }
    if (it->second != MegatronFlagKind::Flag && !inline_value) {
      if (i + 1 >= words.size() || words[i + 1].rfind("--", 0) == 0)
        input_error("{}: {} needs a value", source, flag);
      value = words[++i];
      while (it->second == MegatronFlagKind::List && i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0)
        value += " " + words[++i];
    }
    if (it->second == MegatronFlagKind::Flag && inline_value)
      input_error("{}: {} takes no value", source, flag);
    v[flag] = value;
  }
  const auto joined = [](const std::vector<std::string>& flags) {
    std::string names;
    for (const auto& f : flags) names += (names.empty() ? "" : ", ") + one_line(f);
    return names;
  };
  if (!unknown.empty())
    input_error("{}: {} {} not {} of Megatron-LM (its argument table at {}): a typo, or a flag of another "
                "version; remove or rename {}",
                source, joined(unknown), unknown.size() == 1 ? "is" : "are", unknown.size() == 1 ? "a flag" : "flags",
                megatron_arg_table_commit().substr(0, 8), unknown.size() == 1 ? "it" : "them");
  if (!refused.empty()) {
    const std::string names = joined(refused);
    input_error("{}: strata does not model {} (unknown to the import, or changing the job in a "
                "way strata cannot predict); remove {} to predict the rest",
                source, names, refused.size() == 1 ? "it" : "them");
  }
  return v;
}

}  // namespace strata::exports
