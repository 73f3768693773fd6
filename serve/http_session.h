// An accepted connection handed to its HTTP session (serve/http_session.cpp).
#pragma once

#include "serve/network.h"

namespace lact::serve {

// Serves the connection until it closes or is upgraded to a stream; past context.max_connections it answers 503.
void serve_connection(ServerContext& context, tcp::socket socket);

}  // namespace lact::serve
