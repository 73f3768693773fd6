// The network side of `lact serve` (Boost.Beast over Boost.Asio, one thread): what the HTTP connections and the
// WebSocket streams share. Only serve/'s .cpp files include this (Beast is heavy to compile).
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <list>

#include "serve/access.h"
#include "serve/hub.h"

namespace lact::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;

// An HTTP connection (serve/http_session.cpp). Those that have not shown the token yet are listed: the first
// closed when connections or descriptors run short, so that clients without the token can never keep the one
// with it out. The list holds the one concrete type and calls it without a virtual call: under UBSan a virtual
// call's type check, on its first use, probes the object's memory with pipe(), which fails when the descriptors
// have run out (the very case the list is for), and then reports a live session as "invalid vptr"
// (docs/guide/serve.md).
class HttpSession;

struct ServerContext {
  ServerContext(Hub& hub_, asio::io_context& io_, int max_connections_, RateLimit api_rate_)
      : hub(hub_), io(io_), max_connections(max_connections_), api_rate(api_rate_) {}
  Hub& hub;
  asio::io_context& io;
  int connections = 0;  // open TCP connections (HTTP and streams)
  int max_connections = 0;
  RateLimit api_rate;                // every HTTP request that showed the token, together
  std::list<HttpSession*> unproven;  // without the token, oldest first
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }

  // Closes the oldest connection without the token; false when there is none.
  bool drop_oldest_unproven();

  // POST /api/render renders take turns here, one at the render thread at a time: a stream's next frame then
  // waits behind at most one of them, however many connections ask at once. `start_render` returns false when
  // its client has left meanwhile (nothing started): the next one is taken.
  void queue_render(std::function<bool()> start_render);
  void render_done();           // the API render at the render thread ended: the next one starts
  void drop_waiting_renders();  // at shutdown, before the hub goes
  void start_next_render();
  std::deque<std::function<bool()>> renders_waiting;
  bool api_rendering = false;
};

// Takes over an upgraded connection (the request was checked: token, Origin, the count of streams).
void start_stream(ServerContext& context, beast::tcp_stream stream, Request request);

}  // namespace lact::serve
