// The network side of `lact serve` (Boost.Beast over Boost.Asio, one thread): what the HTTP connections and the
// WebSocket streams share. Only serve/'s .cpp files include this (Beast is heavy to compile).
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>

#include "serve/access.h"
#include "serve/hub.h"

namespace lact::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;

struct ServerContext {
  Hub& hub;
  asio::io_context& io;
  int connections = 0;  // open TCP connections (HTTP and streams)
  int max_connections = 0;
  RateLimit api_rate;  // every HTTP request together
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

// Takes over an upgraded connection (the request was checked: token, Origin, the count of streams).
void start_stream(ServerContext& context, beast::tcp_stream stream, Request request);

}  // namespace lact::serve
