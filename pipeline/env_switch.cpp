#include "pipeline/env_switch.h"

#include <cstdlib>
#include <string>

#include "system/error.h"
#include "system/terminal_text.h"

namespace lact {

bool diagnostic_switch(const char* name) {
  const char* value = std::getenv(name);
  const std::string text = value ? value : "";
  if (text.empty() || text == "0") return false;
  if (text == "1") return true;
  throw Error(name, "'" + terminal_text(text.substr(0, 40)) + "' is not 0 or 1 (unset or 0: off, 1: on)");
}

}  // namespace lact
