#include "pipeline/model_convert.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>

#include "core/config.h"
#include "core/safetensors.h"
#include "system/error.h"
#include "system/file_io.h"
#include "system/signal_cleanup.h"
#include "system/subprocess.h"

#ifndef LACT_SOURCE_DIR
#error "LACT_SOURCE_DIR: the checkout lact is built from (pipeline/CMakeLists.txt)"
#endif
#ifndef LACT_PYTHON_PATH
#define LACT_PYTHON_PATH "/usr/bin/python3"
#endif

namespace lact {

namespace {

// Hidden, as every temporary lact leaves after a kill -9 (`.NAME.tmp-*`), with the extension the converter wants.
std::string hidden_temporary_beside(const std::string& target) {
  const size_t slash = target.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : target.substr(0, slash + 1);
  const std::string name = target.substr(folder.size()).substr(0, 120);
  return folder + "." + name + ".tmp-" + std::to_string(::getpid()) + ".safetensors";
}

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\r\n");
  if (end == std::string::npos) return "";
  const size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end - (start == std::string::npos ? 0 : start + 1) + 1);
}

}  // namespace

std::string converter_python() {
  const char* python = std::getenv("LACT_PYTHON");
  return python && *python ? python : LACT_PYTHON_PATH;
}

std::string converter_script() { return std::string(LACT_SOURCE_DIR) + "/tools/convert_checkpoint.py"; }

namespace {

// The converter checks the tensors against the config, not every option lact refuses (a causal attention, a
// learned optimizer): the config is read here as a load reads it, so such a file is refused now, not written
// and refused at its first use. The reason names the checkpoint, not the temporary.
void check_model_loads(const std::string& temporary, const std::string& named) {
  try {
    config_from_metadata(SafetensorsFile(temporary));
  } catch (const Error& e) {
    std::string reason = e.what();
    if (reason.rfind(temporary + ": ", 0) == 0) reason = reason.substr(temporary.size() + 2);
    throw Error(named, "lact cannot load this model: " + reason);
  }
}

// Runs the converter with `arguments` then "-o TEMPORARY", checks the result (`check`, if any) and renames it
// into `output`.
std::string run_converter(const std::vector<std::string>& arguments, const std::string& named,
                          const std::string& output, const std::function<void(const std::string&)>& check = nullptr) {
  const std::string script = converter_script();
  if (::access(script.c_str(), R_OK) != 0)
    throw Error(script, "the converter is missing (lact model convert runs it from the checkout lact was built from)");
  const std::string python = find_program(converter_python());
  if (python.empty())
    throw Error(converter_python(),
                "not found: the converter needs Python with torch (Debian: sudo apt-get install "
                "python3-torch; LACT_PYTHON names another Python)");
  const std::string target = resolve_output_path(output);
  const std::string temporary = hidden_temporary_beside(target);
  std::vector<std::string> argv = {python, script};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  argv.insert(argv.end(), {"-o", temporary});
  const int token = register_temporary(temporary);
  std::string out, errors;
  // Dies with lact, even by kill -9: an orphan went on for minutes and left its output under a visible name.
  const int status = run_program_piped(
      argv,
      [&out](const std::string& chunk) {
        out += chunk;
        return true;
      },
      errors, StreamLimits{}, named + ": the converter");
  if (status != 0) {
    std::remove(temporary.c_str());
    unregister_temporary(token);
    const std::string reason = last_line(errors);
    throw Error(named, "the converter failed (exit status " + std::to_string(status) +
                           "): " + (reason.empty() ? "no message" : reason));
  }
  try {
    if (check) check(temporary);
  } catch (...) {
    std::remove(temporary.c_str());
    unregister_temporary(token);
    throw;
  }
  rename_into_place(temporary, target);
  unregister_temporary(token);
  // The converter names the file it wrote, the temporary: the summary names the output it became.
  std::string summary = last_line(out);
  const size_t at = summary.find(temporary);
  if (at != std::string::npos) summary.replace(at, temporary.size(), target);
  return summary;
}

}  // namespace

std::string convert_checkpoint(const std::string& checkpoint, const std::string& config, const std::string& output) {
  require_regular_file(checkpoint);
  std::vector<std::string> arguments = {checkpoint};
  if (!config.empty()) arguments.insert(arguments.end(), {"--config", config});
  return run_converter(arguments, checkpoint, output,
                       [&checkpoint](const std::string& temporary) { check_model_loads(temporary, checkpoint); });
}

std::string convert_lpips_weights(const std::string& alexnet, const std::string& linear, const std::string& output) {
  require_regular_file(alexnet);
  require_regular_file(linear);
  return run_converter({"--lpips", alexnet, linear}, alexnet, output);
}

}  // namespace lact
