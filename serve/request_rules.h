// What `lact serve` does with one HTTP request, decided from its header alone, before any byte of a body is
// read: the Host check (without a token), the token, the body's framing and size, and the route. No socket and
// no hub: the HTTP session acts on the decision (serve/http_session.cpp); tests/unit/serve/test_serve.cpp and the HTTP
// fuzzer (tests/fuzz/fuzz_http.cpp) call it directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace lact::serve {

// The parts of a request header the rules read (empty strings for absent headers).
struct RequestHead {
  std::string method;  // as sent: "GET", "POST", ...
  std::string target;  // "/api/render?format=jpeg"
  std::string host, origin, authorization;
  size_t host_lines = 1;           // Host header lines sent: more than one is a 400 (RFC 9112 section 3.2)
  bool http11 = true;              // HTTP/1.1 (Beast parses 1.0 and 1.1 only): no Host line is a 400 there
  bool upgrade = false;            // a WebSocket upgrade
  bool transfer_encoding = false;  // a Transfer-Encoding header (chunked): such a body is never read
  uint64_t content_length = 0;     // 0 when absent
};

struct ServerRules {
  std::string token;                // empty: --no-token (then Host must name loopback)
  size_t max_body = 65536;          // bytes of a request body
  size_t max_video_body = 1 << 20;  // bytes of POST /api/video's (a camera path of up to 2000 frames)
};

enum class Action {
  refuse,
  page,
  scene,   // GET /api/scene[?scene=N]
  scenes,  // GET /api/scenes
  render,
  stream,
  video_start,
  video_status,
  video_cancel,
  video_download,
  path_interpolate,  // POST /api/path/interpolate (serve/path_routes.h)
  path_list,         // GET /api/paths
  path_load,         // GET /api/paths/NAME
  path_save          // POST /api/paths/NAME[?replace=1]
};

// Whether the action reads a request body (POST /api/render, /api/video, /api/path/interpolate, /api/paths/NAME).
inline bool takes_body(Action action) {
  return action == Action::render || action == Action::video_start || action == Action::path_interpolate ||
         action == Action::path_save;
}
// Whether its body may be a camera path (up to ServerRules::max_video_body bytes, not max_body).
inline bool takes_path_body(Action action) {
  return action == Action::video_start || action == Action::path_interpolate || action == Action::path_save;
}

struct Decision {
  Action action = Action::refuse;
  int status = 0;           // refuse: the HTTP status
  std::string message;      // refuse: one line saying why
  bool authorized = false;  // the token was shown (or none is needed): only then may it spend a shared budget
  bool keep_alive = false;  // the connection may carry another request after the answer (no body left unread)
  bool jpeg = false;        // render: the answer's format
  int quality = 90;         // render: its JPEG quality
  bool side_b = false;      // render: ?side=b, the comparison's second side
  int video = -1;           // video_status, video_cancel, video_download: the job's id
  int client = -1;          // the video routes: the stream a job belongs to (?client=N)
  std::string name;         // path_load, path_save: the NAME of /api/paths/NAME, as sent (checked when used)
  bool replace = false;     // path_save: ?replace=1
  int scene = 0;            // scene: ?scene=N, as sent (checked against the scenes when answered)
};

// The decision for one request header. Refusals, in order: 400 no Host line in HTTP/1.1, more than one, or a
// Host that is no host name with an optional port (RFC 9112 section 3.2; the connection closes, as for a header
// the parser refused), 403 a Host that is not a loopback name (without a
// token: a web page whose name resolves to 127.0.0.1 must not read the scene), 401 no or a wrong token, 411 a
// Transfer-Encoding, 400 a body where the route takes none, 413 a body over max_body, 404 / 403 (Origin) for a
// stream, 404 / 405 for the routes, 400 for a bad format or quality.
Decision screen_request(const RequestHead& head, const ServerRules& rules);

// True when `host` is a Host header value RFC 9110 allows: uri-host [":" port] (RFC 3986: an IP literal in
// brackets, or a name of unreserved characters, %XX and sub-delims; the port digits only), or empty.
bool valid_host(std::string_view host);

// True when a Host header names this machine's loopback: 127.x.y.z, localhost or [::1], with an optional port.
bool loopback_host(std::string_view host);

// A header's value quoted in a message: cut to 200 bytes, every byte a terminal or JSON could not take written
// as \xNN (system/terminal_text.h).
std::string quoted_header(std::string_view value);

// `value` as JSON text; a string in it that is not UTF-8 (a path, a header quoted) is written escaped
// (system/utf8_text.h) where nlohmann's strict dump() would throw.
std::string json_text(const nlohmann::json& value);

// The body of a refusal: {"error": message}.
std::string error_json(const std::string& message);

}  // namespace lact::serve
