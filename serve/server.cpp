#include "serve/server.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "serve/access.h"
#include "serve/compare_side.h"
#include "serve/http_session.h"
#include "serve/keep_serving.h"
#include "serve/served_scenes.h"
#include "system/error.h"
#include "system/terminal_text.h"

namespace lact::serve {

namespace {

// Descriptors kept free beside the connections: the encode's and the renders' files, Asio's own.
constexpr long kReservedDescriptors = 32;
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
constexpr int kPageSizeFactor = 4;    // the page's largest resolution, times the working size (page.html)
constexpr int kMaxServedSide = 8192;  // --max-side's bound

// Out of descriptors (EMFILE, ENFILE) or of kernel memory: accepting again at once would fail again, forever.
bool out_of_resources(const beast::error_code& error) {
  return error == asio::error::no_descriptors || error.value() == ENFILE || error == asio::error::no_buffer_space ||
         error == asio::error::no_memory;
}

// Accepts connections until the acceptor is closed. Out of descriptors it frees one (the oldest connection
// without the token) and waits a moment before accepting again, rather than spinning on the error.
void accept(ServerContext& context, tcp::acceptor& acceptor, asio::steady_timer& pause) {
  acceptor.async_accept([&context, &acceptor, &pause](beast::error_code error, tcp::socket socket) {
    if (error == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (out_of_resources(error)) {
      context.drop_oldest_unproven();
      pause.expires_after(kAcceptPause);
      pause.async_wait([&context, &acceptor, &pause](beast::error_code e) {
        if (!e) accept(context, acceptor, pause);
      });
      return;
    }
    if (!error) serve_connection(context, std::move(socket));
    accept(context, acceptor, pause);
  });
}

// Every connection holds a descriptor: the cap (4 x --max-clients + 16) stays below what `ulimit -n` leaves
// beside the descriptors open now and a reserve.
int connection_cap(int max_clients) {
  const long wanted = 4L * max_clients + 16;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return static_cast<int>(wanted);
  long open = 0;
  std::error_code error;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end; it.increment(error))
    ++open;
  const long left = static_cast<long>(limit.rlim_cur) - open - kReservedDescriptors;
  return static_cast<int>(std::max(2L, std::min(wanted, left)));
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
  // A taken port is the usual case (a second lact serve): say how to get a free one.
  const std::string hint = error == asio::error::address_in_use ? " (--port 0 picks a free one)" : "";
  if (error)
    throw Error("--port", "cannot listen on " + o.bind + ":" + std::to_string(o.port) + ": " + error.message() + hint);
}

std::string url(const ServeOptions& o, int port, const std::string& token) {
  const bool any = o.bind == "0.0.0.0" || o.bind == "::";
  std::string host = any ? "127.0.0.1" : o.bind;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(port) + "/" + (token.empty() ? "" : "?token=" + token);
}

// Without --max-side, the largest side the page offers (kPageSizeFactor times a scene's working size): a client
// asking more holds the one render thread the longest (a 1024x1024 frame of the shipped model: ~90 s on 2 CPU
// cores) for a size the page never asks.
ServeOptions with_max_side(const ServeOptions& given,
                           const std::vector<std::unique_ptr<session::SceneSource>>& scenes) {
  ServeOptions o = given;
  if (o.max_side > 0) return o;
  for (const auto& scene : scenes)
    o.max_side = std::max(o.max_side, kPageSizeFactor * std::max(scene->width, scene->height));
  o.max_side = std::min(o.max_side, kMaxServedSide);
  return o;
}

// The page asks for frames at the scene's working size: a --max-side below it would refuse every one.
void check_max_side(const ServeOptions& o, const session::SceneSource& source) {
  const int side = std::max(source.width, source.height);
  if (o.max_side < side)
    throw Error("--max-side", std::to_string(o.max_side) + " is below the scene's working size " +
                                  std::to_string(source.width) + "x" + std::to_string(source.height) +
                                  ": the page asks for frames of that size (give at least " + std::to_string(side) +
                                  ")");
}

void run_network(asio::io_context& io) {
  keep_serving([&io] { io.run(); },
               [](const std::string& error) {
                 std::fprintf(stderr, "lact serve: a connection failed and was closed (%s)\n",
                              terminal_text(error).c_str());
               });
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
  if (o.max_side < 0 || o.max_side > kMaxServedSide) throw Error("--max-side", "must be in [1, 8192]");
  if (!(o.max_rate >= 1 && o.max_rate <= 100000)) throw Error("--max-rate", "must be in [1, 100000]");
  if (!(o.cache_memory_gb >= 0 && o.cache_memory_gb <= 1e6)) throw Error("--cache-memory", "must be in [0, 1e6] GB");
}

void run_server(const ServeOptions& given) {
  check_serve_options(given);
  check_serve_environment();
  std::vector<std::unique_ptr<session::SceneSource>> scenes = open_served_scenes(given);
  const ServeOptions o = with_max_side(given, scenes);
  for (const auto& scene : scenes) check_max_side(o, *scene);
  std::unique_ptr<session::SceneSource> compare = open_compare_source(o, *scenes[0]);  // side b, checked here
  const std::string title =
      scenes.size() > 1 ? std::to_string(scenes.size()) + " scenes" : terminal_text(scenes[0]->selection.scene.name);
  const std::string token = o.no_token ? "" : o.token.empty() ? generate_token() : o.token;

  // Destroyed in this order: the io_context's handlers (sessions close their channels), the threads (their
  // last notices go to a stopped io_context), then the hub.
  std::unique_ptr<Hub> hub;
  auto io = std::make_unique<asio::io_context>(1);
  std::string failure;
  hub = std::make_unique<Hub>(
      o, std::move(scenes), token, [&io](std::function<void()> f) { asio::post(*io, std::move(f)); },
      [&](const std::string& error) {
        failure = error;
        io->stop();
      },
      std::move(compare));
  ServerContext context(*hub, *io, connection_cap(o.max_clients), RateLimit(o.max_rate * o.max_clients));
  auto acceptor = std::make_unique<tcp::acceptor>(*io);
  auto pause = std::make_unique<asio::steady_timer>(*io);
  listen(*acceptor, o);
  const int port = acceptor->local_endpoint().port();
  std::printf("lact serve: %s on %s:%d\n  open %s\n", title.c_str(), o.bind.c_str(), port, url(o, port, token).c_str());
  if (!is_loopback(o.bind)) std::printf("  (listening beyond this machine: keep the token secret)\n");
  std::fflush(stdout);

  auto signals = std::make_unique<asio::signal_set>(*io, SIGINT, SIGTERM);
  int stopped_by = 0;
  signals->async_wait([&](beast::error_code error, int signal) {
    if (error) return;
    stopped_by = signal;
    io->stop();
  });
  accept(context, *acceptor, *pause);
  hub->start();
  run_network(*io);

  signals.reset();
  pause.reset();
  acceptor.reset();
  hub->stop();
  context.drop_waiting_renders();
  io.reset();
  hub.reset();
  if (!failure.empty()) throw Error("serve", "the scene could not be encoded: " + failure);
  std::printf("lact serve: stopped (%s)\n", stopped_by == SIGTERM ? "SIGTERM" : "SIGINT");
}

}  // namespace lact::serve
