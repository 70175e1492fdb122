// The `# note:` lines of the plan, simulate and compare outputs: where the numbers come
// from. The planner's prediction notes cover each cost term; these add what a reader must
// not miss about the cluster, and merge the lists without repeats.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "costmodel/cluster_spec.h"

namespace strata::report {

// The one trust warning of an uncalibrated cluster ("profile `x` is datasheet-only (not
// calibrated): run `strata calibrate` ..."); none when the device has measured tables.
std::vector<std::string> provenance_notes(const costmodel::ClusterSpec& cluster);

// When the cluster's measured tables name the processor they were measured on and it is not
// `this_host` (kernels::CpuInfo::host_line(): "model (family f model m), N logical CPUs, ..."),
// a warning that the predictions use another processor's numbers; "" otherwise.
std::string other_processor_note(const costmodel::ClusterSpec& cluster, const std::string& this_host);

// Appends each of `more` that `notes` does not hold yet, in order.
void append_new_notes(std::vector<std::string>& notes, const std::vector<std::string>& more);

// The note as one short line for the `# note:` lines above a table: its parenthesised
// asides (sources, citations, derivations) left out and the rest cut to kShortNoteChars
// with "...". The full notes are in the JSON and YAML outputs and behind --explain.
inline constexpr std::size_t kShortNoteChars = 120;
std::string short_note(const std::string& note);

}  // namespace strata::report
