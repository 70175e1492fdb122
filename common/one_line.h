// one_line: free text (a model, cluster or stack name read from a user's file) made safe for
// one line of output. A name can hold any character; a newline in it must not end a `#`
// comment, a Markdown heading or a table row and start a line of its own.
#pragma once
#include <string>

namespace strata {

// `s` with control characters (U+0000..U+001F, U+007F) and backslashes written as C escapes
// (\n, \r, \t, \\, \xNN); every other byte unchanged.
std::string one_line(const std::string& s);

// A message (a multi-line library or CLI11 message) as one line: each newline becomes "; ",
// carriage returns and trailing separators go, so scripts can rely on `error:` being exactly
// one line. Unlike one_line, the text stays readable rather than escaped.
std::string message_on_one_line(const std::string& s);

}  // namespace strata
