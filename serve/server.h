// `lact serve`: the viewer in a web browser (docs/guide/serve.md). Opens the scene (errors before any port is bound),
// listens, prints the URL with its token, encodes once (progress in the terminal and on the page), and serves
// the page, the stream and the API until SIGINT or SIGTERM, which end it cleanly (exit 0).
#pragma once

#include "serve/serve_options.h"

namespace lact::serve {

// Throws lact::Error (one line) for bad flags, data, model, or an address it cannot listen on.
void run_server(const ServeOptions& options);

// The options' own checks (no scene needed): port, bind, token rules, bounds. Error naming the flag.
void check_serve_options(const ServeOptions& options);

}  // namespace lact::serve
