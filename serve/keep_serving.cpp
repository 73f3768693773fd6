#include "serve/keep_serving.h"

#include <exception>

namespace lact::serve {

void keep_serving(const std::function<void()>& run, const std::function<void(const std::string&)>& report) {
  for (;;) {
    try {
      run();
      return;
    } catch (const std::exception& e) {
      report(e.what());
    } catch (...) {
      report("an exception that is not a std::exception");
    }
  }
}

}  // namespace lact::serve
