// Free text (model, cluster and stack names) placed into the comments and strings of an
// export. A name read from a user's YAML or HF config can hold any character; a newline in
// it must not end a `#` comment and start a shell argument or a TOML table.
#pragma once
#include <string>

#include "common/one_line.h"  // one_line: for comments and headings

namespace strata::exports {

using strata::one_line;
// A TOML basic string: "..." with quotes, backslashes and every control character escaped
// (\n, \t, \r, \uXXXX), as the TOML 1.0 spec requires.
std::string toml_string(const std::string& s);

}  // namespace strata::exports
