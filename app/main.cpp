// lact: the command line. Subcommands live in cmd_*.cpp; errors become one line and exit code 1.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "app/commands.h"
#include "app/suggestions.h"
#include "distributed/distributed.h"
#include "system/error.h"
#include "system/signal_cleanup.h"
#include "system/terminal_text.h"

namespace {
// Messages may quote names from data files: control characters (line breaks, terminal escapes) are escaped
// visibly (system/terminal_text.h), so a message stays one harmless line.
std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return lact::terminal_text(text);
}

// Where the flags of the command that failed to parse are listed: `lact --help` lists only the commands, so a
// wrong flag of `lact render` points to `lact render --help` (and of `lact model fetch` to its own).
std::string help_command(const CLI::App& app) {
  std::string command = "lact";
  for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    command += " " + at->get_name();
  }
  return command + " --help";
}

// What a command printed must have reached stdout: a full disk or a closed pipe is an error, not exit 0.
bool stdout_written() {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return true;
  const int error = errno;
  std::fprintf(stderr, "lact: stdout: %s\n", error ? std::strerror(error) : "a write failed");
  return false;
}
}  // namespace

// Across ranks a line names the rank that printed it; the run's MPI ends (or, after an error only this rank
// saw, aborts every rank rather than leave them waiting).
int fail(const std::string& what, bool unagreed) {
  const lact::Ranks* ranks = lact::current_ranks();
  std::fprintf(stderr, "lact: %s%s\n", ranks && ranks->size() > 1 ? ranks->label().c_str() : "", what.c_str());
  lact::finish_distributed(unagreed);
  return 1;
}

int main(int argc, char** argv) {
  lact::install_signal_cleanup();  // first: a signal from here on removes temporaries and ends lact by it
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
  lact::app::add_serve_command(app);
  lact::app::add_import_command(app);
  lact::app::add_model_command(app);
  if (argc == 1) {  // a bare `lact`: what it can do, not an error
    std::fputs(app.help().c_str(), stdout);
    return stdout_written() ? 0 : 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version: their text must have reached stdout too
    const int status = app.exit(e);
    return stdout_written() ? status : 1;
  } catch (const CLI::ParseError& e) {  // a user error like any other: one line, exit 1
    const std::string guess = lact::app::parse_error_suggestion(app, argc, argv);
    std::fprintf(stderr, "lact: %s (see %s)\n", one_line(guess.empty() ? e.what() : guess).c_str(),
                 help_command(app).c_str());
    return 1;
  } catch (const lact::RankFailure& e) {  // every rank has it; rank 0 prints it
    if (e.print()) std::fprintf(stderr, "lact: %s\n", one_line(e.what()).c_str());
    lact::finish_distributed(false);
    return 1;
  } catch (const std::bad_alloc&) {
    return fail("out of memory (try fewer views, a smaller --size or a smaller model)", true);
  } catch (const std::exception& e) {
    return fail(one_line(e.what()), true);
  }
  lact::finish_distributed(false);
  return stdout_written() ? 0 : 1;
}
