// The network thread's loop, kept going: one connection's failure must never end `lact serve`.
#pragma once

#include <functional>
#include <string>

namespace lact::serve {

// Calls `run` (the io_context's run) until it returns. An exception thrown out of it (from one connection's
// handler: a Beast parser's std::length_error, nlohmann's type_error, a bug) is passed to `report` and `run` is
// called again: Asio lets run() be entered again after a handler threw, and the handler that threw, with the
// session it held, is gone by then, so that connection is closed and the others go on.
void keep_serving(const std::function<void()>& run, const std::function<void(const std::string&)>& report);

}  // namespace lact::serve
