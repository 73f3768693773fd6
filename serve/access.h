// Who may talk to `lact serve` and how much: the token (generated like Jupyter's, compared in constant time),
// the query string it travels in, the WebSocket Origin check, which binds are loopback, and a per-connection
// request rate. No network code here (unit-tested by tests/unit/serve/test_serve.cpp).
#pragma once

#include <map>
#include <string>

namespace lact::serve {

// 32 hex digits from the system's random source (std::random_device).
std::string generate_token();
// Equal strings, in a time that does not depend on where they first differ.
bool same_token(const std::string& given, const std::string& expected);

// "/api/render?format=jpeg&quality=80" -> path "/api/render" and its %-decoded parameters (the last of a repeated
// name wins). Malformed escapes decode to nothing rather than failing the request.
struct Target {
  std::string path;
  std::map<std::string, std::string> query;
};
Target parse_target(const std::string& target);

// The token a request carries: the `token` parameter, else "Authorization: token T" (or "Bearer T").
std::string request_token(const Target& target, const std::string& authorization);

// True when `origin` (a browser's Origin header) names the host the request was sent to (its Host header):
// "http://127.0.0.1:8080" for Host "127.0.0.1:8080". A missing Origin (not a browser) passes: the token still
// guards it.
bool origin_allowed(const std::string& origin, const std::string& host);

// 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& address);

// Requests per second over a burst: a token bucket that refills at `rate` per second up to `rate * burst_seconds`.
class RateLimit {
 public:
  explicit RateLimit(double rate, double burst_seconds = 2);
  bool allow(double now);  // takes one request's token when there is one

 private:
  double rate_, capacity_, tokens_, last_ = -1;
};

}  // namespace lact::serve
