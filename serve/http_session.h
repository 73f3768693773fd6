// An accepted connection handed to its HTTP session (serve/http_session.cpp).
#pragma once

#include "serve/network.h"

namespace lact::serve {

// Serves the connection until it closes or is upgraded to a stream; past context.max_connections it answers 503.
void serve_connection(ServerContext& context, tcp::socket socket);

// Error naming LACT_SERVE_IDLE_TIMEOUT_MS (a tests-only setting) when it holds a value it does not take: run_server
// calls it before any work, so no session meets it.
void check_serve_environment();

}  // namespace lact::serve
