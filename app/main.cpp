// lact: the command line. Subcommands live in cmd_*.cpp; errors become one line and exit code 1.
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "app/commands.h"
#include "core/error.h"

namespace {
// Messages may quote names from data files: control characters (line breaks, terminal escapes) become '?'.
std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return text;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lact: LaCT novel-view synthesis (encode posed images into fast weights, render new views)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "lact 0.1.0");
  lact::app::add_render_command(app);
  lact::app::add_encode_command(app);
  lact::app::add_info_command(app);
  lact::app::add_bench_command(app);
  lact::app::add_path_command(app);
  lact::app::add_eval_compare_command(app);
  lact::app::add_view_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {  // a user error like any other: one line, exit 1
    std::fprintf(stderr, "lact: %s (see lact --help)\n", one_line(e.what()).c_str());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "lact: out of memory (try fewer views, a smaller --size or a smaller model)\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lact: %s\n", one_line(e.what()).c_str());
    return 1;
  }
  return 0;
}
