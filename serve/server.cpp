#include "serve/server.h"

#include <cstdio>
#include <memory>

#include "core/error.h"
#include "serve/access.h"
#include "serve/http_session.h"

namespace lact::serve {

namespace {

// Accepts connections until the acceptor is closed.
void accept(ServerContext& context, tcp::acceptor& acceptor) {
  acceptor.async_accept([&context, &acceptor](beast::error_code error, tcp::socket socket) {
    if (error == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (!error) serve_connection(context, std::move(socket));
    accept(context, acceptor);
  });
}

void listen(tcp::acceptor& acceptor, const ServeOptions& o) {
  beast::error_code error;
  const asio::ip::address address = asio::ip::make_address(o.bind == "localhost" ? "127.0.0.1" : o.bind, error);
  if (error) throw Error("--bind", "'" + o.bind + "' is not an IP address (127.0.0.1, 0.0.0.0, ::1, ...)");
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(o.port));
  acceptor.open(endpoint.protocol(), error);
  if (!error) acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor.bind(endpoint, error);
  if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
  if (error)
    throw Error("--port", "cannot listen on " + o.bind + ":" + std::to_string(o.port) + ": " + error.message());
}

std::string url(const ServeOptions& o, int port, const std::string& token) {
  const bool any = o.bind == "0.0.0.0" || o.bind == "::";
  std::string host = any ? "127.0.0.1" : o.bind;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(port) + "/" + (token.empty() ? "" : "?token=" + token);
}

}  // namespace

void check_serve_options(const ServeOptions& o) {
  if (o.port < 0 || o.port > 65535) throw Error("--port", "must be in [0, 65535] (0: any free port)");
  if (o.no_token && !is_loopback(o.bind))
    throw Error("--no-token", "only with a loopback --bind (127.0.0.1): anyone who reaches " + o.bind +
                                  " could use this machine's GPU and read the scene");
  if (o.no_token && !o.token.empty()) throw Error("--no-token", "give --token or --no-token, not both");
  if (!o.token.empty() &&
      (o.token.size() < 8 || o.token.size() > 256 ||
       o.token.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_.~") !=
           std::string::npos))
    throw Error("--token", "8 to 256 letters, digits or -_.~");
  if (o.max_clients < 1 || o.max_clients > 1024) throw Error("--max-clients", "must be in [1, 1024]");
  if (o.max_side < 1 || o.max_side > 8192) throw Error("--max-side", "must be in [1, 8192]");
  if (!(o.max_rate >= 1 && o.max_rate <= 100000)) throw Error("--max-rate", "must be in [1, 100000]");
}

void run_server(const ServeOptions& o) {
  check_serve_options(o);
  session::SceneSource source = session::open_scene_source(o);
  const std::string token = o.no_token ? "" : o.token.empty() ? generate_token() : o.token;

  // Destroyed in this order: the io_context's handlers (sessions close their channels), the threads (their
  // last notices go to a stopped io_context), then the hub.
  std::unique_ptr<Hub> hub;
  auto io = std::make_unique<asio::io_context>(1);
  std::string failure;
  hub = std::make_unique<Hub>(
      o, source, token, [&io](std::function<void()> f) { asio::post(*io, std::move(f)); },
      [&](const std::string& error) {
        failure = error;
        io->stop();
      });
  ServerContext context{*hub, *io, 0, 4 * o.max_clients + 16, RateLimit(o.max_rate * o.max_clients)};
  auto acceptor = std::make_unique<tcp::acceptor>(*io);
  listen(*acceptor, o);
  const int port = acceptor->local_endpoint().port();
  std::printf("lact serve: %s on %s:%d\n  open %s\n", source.selection.scene.name.c_str(), o.bind.c_str(), port,
              url(o, port, token).c_str());
  if (!is_loopback(o.bind)) std::printf("  (listening beyond this machine: keep the token secret)\n");
  std::fflush(stdout);

  auto signals = std::make_unique<asio::signal_set>(*io, SIGINT, SIGTERM);
  int stopped_by = 0;
  signals->async_wait([&](beast::error_code error, int signal) {
    if (error) return;
    stopped_by = signal;
    io->stop();
  });
  accept(context, *acceptor);
  hub->start();
  io->run();

  signals.reset();
  acceptor.reset();
  hub->stop();
  io.reset();
  hub.reset();
  if (!failure.empty()) throw Error("serve", "the scene could not be encoded: " + failure);
  std::printf("lact serve: stopped (%s)\n", stopped_by == SIGTERM ? "SIGTERM" : "SIGINT");
}

}  // namespace lact::serve
