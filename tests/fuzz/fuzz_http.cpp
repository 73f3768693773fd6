// Fuzz target: what `lact serve` does with the bytes of one connection, without a socket. The input is read as
// the server reads it (serve/http_session.cpp): Beast's request parser with the server's limits (8 KiB of
// header, no body limit until the rules judged the header, then 64 KiB of body), each header judged by the request
// rules (serve/request_rules.h, with a token and without one) before any body byte, a render's body read as a camera,
// keep-alive requests one after another, and after an upgrade the rest as a stream message (serve/camera_message.h).
// Beast's parse errors end the connection; lact::Error is a refusal; any other exception is a bug that would reach the
// server's loop.
#include <boost/asio/buffer.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <typeinfo>

#include "core/camera_geometry.h"
#include "serve/camera_message.h"
#include "serve/http_head.h"
#include "serve/request_rules.h"
#include "system/error.h"
#include "system/utf8_text.h"

namespace {

namespace http = boost::beast::http;
using lact::serve::Action;
using lact::serve::Decision;

constexpr size_t kMaxBody = 65536;
constexpr unsigned kHeaderLimit = 8192;

const std::vector<lact::Camera>& views() {
  static const std::vector<lact::Camera> cameras = lact::turntable_path(4, 64, 48);
  return cameras;
}

// What every answer must be: a status the rules use, one line of UTF-8 that goes out as JSON.
void check_decision(const Decision& d, bool has_body) {
  if (d.action == Action::refuse) {
    if (d.status < 400 || d.status > 499 || d.message.empty() || d.message.find('\n') != std::string::npos)
      __builtin_trap();
    const std::string json = lact::serve::error_json(d.message);
    if (!lact::is_utf8(json) || nlohmann::json::parse(json, nullptr, false).is_discarded()) __builtin_trap();
  } else if (!d.authorized) {
    __builtin_trap();  // served without the token
  }
  if (d.keep_alive && has_body && !lact::serve::takes_body(d.action)) __builtin_trap();  // a body left unread
  if (d.action == Action::render && (d.quality < 1 || d.quality > 100)) __builtin_trap();
}

// Feeds the parser from `at` until `done` says stop; false when the connection would end (an error, or bytes
// missing: the server waits, then times the connection out).
template <class Done>
bool feed(http::request_parser<http::string_body>& parser, const uint8_t* data, size_t size, size_t& at, Done done) {
  while (!done()) {
    boost::beast::error_code error;
    const size_t used = parser.put(boost::asio::buffer(data + at, size - at), error);
    at += used;
    if (error || (used == 0 && !done())) return false;
  }
  return true;
}

// One request from `at`: false when the connection ends after it.
bool one_request(const uint8_t* data, size_t size, size_t& at) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // as the server: the rules judge a Content-Length,
                                                                 // then the body gets its limit
  if (!feed(parser, data, size, at, [&parser] { return parser.is_header_done(); })) return false;
  const lact::serve::RequestHead head = lact::serve::request_head(parser);
  const bool has_body = head.content_length > 0 || head.transfer_encoding;
  check_decision(lact::serve::screen_request(head, {"", kMaxBody}), has_body);
  const Decision d = lact::serve::screen_request(head, {"fuzz-token-1", kMaxBody});
  check_decision(d, has_body);
  const size_t route_limit =
      lact::serve::takes_path_body(d.action) ? lact::serve::ServerRules{}.max_video_body : kMaxBody;
  if (lact::serve::takes_body(d.action) && head.content_length > route_limit) __builtin_trap();  // read past it
  parser.body_limit(route_limit);
  const lact::serve::RenderLimits limits{8, 256, kMaxBody};
  if (d.action == Action::stream) {  // the rest is the stream's: one message
    const std::string message(reinterpret_cast<const char*>(data + at), size - at);
    try {
      lact::serve::parse_camera_message(message, views(), limits);
    } catch (const lact::Error&) {
    }
    try {
      const std::optional<int> scene = lact::serve::scene_message(message, 3, limits);
      if (scene && (*scene < 0 || *scene >= 3)) __builtin_trap();  // a scene outside the list passed
    } catch (const lact::Error&) {
    }
    return false;
  }
  if (d.action == Action::render) {
    parser.eager(true);
    if (!feed(parser, data, size, at, [&parser] { return parser.is_done(); })) return false;
    try {
      lact::serve::render_body_camera(parser.get().body(), limits);
    } catch (const lact::Error&) {
    }
    try {
      const std::optional<int> scene = lact::serve::body_scene(parser.get().body(), 3);
      if (scene && (*scene < 0 || *scene >= 3)) __builtin_trap();
    } catch (const lact::Error&) {
    }
    return true;
  }
  return d.keep_alive && parser.is_done();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    size_t at = 0;
    for (int requests = 0; requests < 8 && at < size; ++requests)
      if (!one_request(data, size, at)) break;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz harness: %s escaped (not lact::Error): %s\n", typeid(e).name(), e.what());
    __builtin_trap();
  }
  return 0;
}
