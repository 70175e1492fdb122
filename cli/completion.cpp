#include "cli/completion.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <vector>

#include "common/output_file.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/device_profile.h"
#include "costmodel/software_stack.h"
#include "models/catalog.h"

namespace strata::cli {
namespace {

// What the word after an option (or a positional argument) can be.
struct ValueWords {
  bool takes_value = false;
  std::vector<std::string> words;  // fixed choices or catalog names
  bool files = false;              // file names complete too
};

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& e : models::model_catalog()) names.push_back(e.name);
  return names;
}

// Catalog names for the options and positionals that take "a catalog name or a file".
std::optional<std::vector<std::string>> catalog_words(const std::string& name) {
  if (name == "--model" || name == "models") return model_names();
  if (name == "--cluster" || name == "clusters") return costmodel::cluster_catalog_names();
  if (name == "--stack" || name == "stacks") return costmodel::software_stack_catalog_names();
  if (name == "--profile") return costmodel::profile_catalog_names();
  return std::nullopt;
}

// Text options whose value is not a file: counts with units, prices, lists of names.
// Every other text option completes file names, as a shell does by default.
const std::set<std::string> kFreeText = {
    "--gpus",    "--memory-headroom", "--train-tokens", "--gpu-hour-price", "--goodput",
    "--recompute-modules", "--backend", "--gemm-dtype", "--lr-schedule", "--max-bytes",
    "--dtypes", "--name", "--source", "--freeze"};

// Fixed choices from the option's validator: CLI11 describes IsMember as "{a,b,c}".
std::vector<std::string> choices(const CLI::Option& opt) {
  const std::string type = opt.get_type_name();
  const auto open = type.find('{'), close = type.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  std::vector<std::string> out;
  std::string word;
  for (char c : type.substr(open + 1, close - open - 1)) {
    if (c == ',') {
      if (!word.empty()) out.push_back(word);
      word.clear();
    } else if (c != ' ') {
      word += c;
    }
  }
  if (!word.empty()) out.push_back(word);
  return out;
}

ValueWords value_words(const CLI::Option& opt, const std::string& key) {
  ValueWords v;
  v.takes_value = opt.get_expected_max() > 0 && opt.get_type_size_max() > 0;
  if (!v.takes_value) return v;
  if (auto c = choices(opt); !c.empty()) {
    v.words = std::move(c);
  } else if (auto names = catalog_words(key)) {
    v.words = std::move(*names);
    v.files = true;
  } else {
    const std::string type = opt.get_type_name();
    const bool number = type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0 ||
                        type.rfind("FLOAT", 0) == 0 || type.rfind("NUMBER", 0) == 0;
    v.files = !number && !kFreeText.contains(key);
  }
  return v;
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// One command level: its path ("" for the root, "models.show" below), its subcommands,
// its option names, and the values each option and its positional take.
struct Level {
  std::string path;
  std::vector<std::string> subcommands, options;
  std::vector<std::pair<std::vector<std::string>, ValueWords>> values;  // option names -> values
  std::optional<ValueWords> positional;
};

void walk(const CLI::App& app, const std::string& path, std::vector<Level>& levels) {
  Level level;
  level.path = path;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!sub->get_name().empty()) level.subcommands.push_back(sub->get_name());
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_group().empty()) continue;  // hidden (debug) options stay hidden
    if (opt->nonpositional()) {
      std::vector<std::string> names;
      for (const auto& s : opt->get_snames()) names.push_back("-" + s);
      for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
      if (names.empty()) continue;
      level.options.insert(level.options.end(), names.begin(), names.end());
      ValueWords v = value_words(*opt, names.back());
      if (v.takes_value) level.values.emplace_back(names, std::move(v));
    } else {
      // A positional: "models show NAME" takes that catalog's names; others are files.
      const std::string parent = app.get_parent() != nullptr ? app.get_parent()->get_name() : "";
      ValueWords v = value_words(*opt, app.get_name() == "show" ? parent : opt->get_name());
      if (app.get_name() == "show") v.files = true;
      level.positional = std::move(v);
    }
  }
  levels.push_back(level);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!sub->get_name().empty())
      walk(*sub, path.empty() ? sub->get_name() : path + "." + sub->get_name(), levels);
}

std::string reply(const ValueWords& v) {
  std::string s = fmt::format("COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"))", join(v.words));
  if (v.files) s += "; COMPREPLY+=($(compgen -f -- \"$cur\"))";
  return s;
}

}  // namespace

std::string completion_script(const CLI::App& root, const std::string& shell) {
  std::vector<Level> levels;
  walk(root, "", levels);
  std::string s = fmt::format(
      "# {} completion for strata, generated from its command-line definition by `strata completion {}`.\n"
      "# Load it with: source <(strata completion {})\n",
      shell, shell, shell);
  if (shell == "zsh") s += "autoload -U +X bashcompinit && bashcompinit\n";
  s += "_strata() {\n"
       "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\" cmd=\"\" i\n"
       "  # The command path so far: the words that name a (sub)command of the one before.\n"
       "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
       "    case \"$cmd/${COMP_WORDS[i]}\" in\n";
  for (const Level& l : levels)
    for (const auto& sub : l.subcommands)
      s += fmt::format("      \"{}/{}\") cmd=\"{}\" ;;\n", l.path, sub, l.path.empty() ? sub : l.path + "." + sub);
  s += "    esac\n  done\n  # The value of the option just typed.\n  case \"$cmd|$prev\" in\n";
  for (const Level& l : levels)
    for (const auto& [names, v] : l.values) {
      std::string pattern;
      for (const auto& n : names) pattern += (pattern.empty() ? "" : "|") + fmt::format("\"{}|{}\"", l.path, n);
      s += fmt::format("    {}) {}; return 0 ;;\n", pattern, reply(v));
    }
  s += "  esac\n  case \"$cmd\" in\n";
  for (const Level& l : levels) {
    s += fmt::format("    \"{}\")\n", l.path);
    s += fmt::format("      if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"))\n",
                     join(l.options));
    if (!l.subcommands.empty())
      s += fmt::format("      else COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"))\n", join(l.subcommands));
    else if (l.positional)
      s += fmt::format("      else {}\n", reply(*l.positional));
    s += "      fi ;;\n";
  }
  s += "  esac\n  return 0\n}\ncomplete -o filenames -F _strata strata\n";
  return s;
}

void add_completion_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "completion", "Print a shell completion script for every command and option (bash or zsh)");
  static std::string shell;
  cmd->add_option("shell", shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
  cmd->footer("Examples:\n  source <(strata completion bash)          # in ~/.bashrc\n"
              "  strata completion bash > /etc/bash_completion.d/strata\n"
              "  source <(strata completion zsh)           # in ~/.zshrc");
  cmd->callback([&app] { print_stdout(completion_script(app, shell)); });
}

}  // namespace strata::cli
