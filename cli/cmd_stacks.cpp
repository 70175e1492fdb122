// `strata stacks`: the software-stack catalog (what each training framework version does:
// attention kernel, precision, overlaps), and `strata stacks show NAME` with the source
// of every setting (the text: report/stack_catalog.h).
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "common/output_file.h"
#include "common/errors.h"
#include "costmodel/software_stack.h"
#include "report/stack_catalog.h"

namespace strata::cli {

void add_stacks_command(CLI::App& app) {
  const CatalogCommand c = add_catalog_command(
      app, "stacks", "List the software stacks (framework kernels and overlaps)",
      "Print one stack's settings with their sources", "catalog name or stack .yaml path",
      [](const std::string& format) {
        std::vector<costmodel::SoftwareStack> stacks;
        for (const auto& n : costmodel::software_stack_catalog_names())
          stacks.push_back(costmodel::load_software_stack(n));
        const std::string gpu_default = costmodel::default_software_stack_name(costmodel::DeviceProfile{});
        return format == "json" ? format_stacks_json(stacks) : format_stacks_table(stacks, gpu_default);
      });
  add_format_flag(*c.show, *c.format);  // `strata stacks show NAME --format json` as well
  c.show->callback([name = c.item, format = c.format] {
    const costmodel::SoftwareStack s = prefixed("stacks show", [&] { return costmodel::load_software_stack(*name); });
    print_stdout(*format == "json" ? format_stack_json(s) : format_stack_text(s));
  });
}

}  // namespace strata::cli
