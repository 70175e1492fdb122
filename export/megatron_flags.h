// The Megatron-LM flags `strata simulate --from megatron` knows: those it models (the model
// shape, layout, batch, precision and overlaps the prediction depends on, the same names
// megatron_args writes) with the kind of value each takes, and the operational ones it lists
// as ignored. Flag names: Megatron-LM main at d98e8a64 (export/frameworks/megatron_args.yaml).
#pragma once
#include <map>
#include <string>

namespace strata::exports {

// List: the words up to the next flag (nargs '+'), kept joined by single spaces.
enum class MegatronFlagKind { Int, Float, Str, Flag, List };

// Every flag the import reads, with the kind of its value.
const std::map<std::string, MegatronFlagKind>& megatron_modelled_flags();
// Flags that do not change the modelled step: data, checkpoints, logging, the learning-rate
// schedule and optimizer hyper-parameters, initialisation, seeds, batch ramp-up. Their
// values (if any) are the words up to the next one starting with "--".
bool megatron_operational_flag(const std::string& f);

}  // namespace strata::exports
