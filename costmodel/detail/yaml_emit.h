// YAML reading/writing helpers shared by device_profile.cpp and cluster_spec.cpp
// (private to costmodel). Numbers are written in the shortest form that reads back
// to the same double, so to_yaml -> parse round-trips exactly.
#pragma once
#include <string>

#include "common/yaml_reader.h"
#include "costmodel/device_profile.h"

namespace strata::costmodel::detail {

std::string yaml_number(double x);
std::string yaml_quote(const std::string& s);  // double-quoted scalar with escapes
std::string yaml_key(const std::string& s);    // bare if simple, else quoted
std::string yaml_provenance(const Provenance& p);  // flow mapping {kind: ..., ...}
// The profile as a block mapping, every line prefixed by `indent` spaces.
std::string device_profile_yaml(const DeviceProfile& p, int indent);

// `source:` mapping: kind in {datasheet, measured, estimate} plus >= 1 other field.
Provenance parse_provenance(const YamlReader& r);
// A device profile from an already parsed mapping (strict).
DeviceProfile parse_device_profile_node(const YamlReader& r);

}  // namespace strata::costmodel::detail
