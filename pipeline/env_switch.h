// The diagnostic switches read from the environment (LACT_TIME_ESTIMATE, LACT_MEMORY_ESTIMATE): off unless set to 1.
#pragma once

namespace lact {

// Unset, empty or 0: off; 1: on; any other value is environment input lact cannot read, refused with one line
// naming the variable (Error), as every environment input is: "yes" or "true" turning a print on and "0" turning
// it on too (as any value did before) both surprise.
bool diagnostic_switch(const char* name);

}  // namespace lact
