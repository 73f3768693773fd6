#include "serve/request_rules.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "serve/access.h"
#include "system/terminal_text.h"
#include "system/utf8_text.h"

namespace lact::serve {

namespace {

bool all_digits(std::string_view text) {
  return !text.empty() && text.size() <= 5 &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// A dotted IPv4 address in 127.0.0.0/8, each part a decimal 0..255.
bool loopback_ipv4(std::string_view name) {
  int parts = 0;
  size_t begin = 0;
  while (begin <= name.size()) {
    size_t end = name.find('.', begin);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(begin, end - begin);
    if (part.empty() || part.size() > 3 || !all_digits(part) || std::stoi(std::string(part)) > 255) return false;
    if (parts == 0 && part != "127") return false;
    ++parts;
    begin = end + 1;
  }
  return parts == 4;
}

// A character of a reg-name (RFC 3986: unreserved, sub-delims; '%' is checked as %XX by the caller).
bool name_character(unsigned char c) { return std::isalnum(c) || std::strchr("-._~!$&'()*+,;=", c) != nullptr; }

// A reg-name, or what an IP literal's brackets hold (the same characters and ':'): %XX escapes allowed.
bool host_name(std::string_view name, bool literal) {
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = name[i];
    if (c == '%') {
      if (i + 2 >= name.size() || !std::isxdigit(static_cast<unsigned char>(name[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(name[i + 2])))
        return false;
      i += 2;
    } else if (c == 0 || !(name_character(c) || (literal && c == ':'))) {
      return false;
    }
  }
  return true;
}

// The fault of a request's Host lines, or "" (RFC 9112 section 3.2: a server MUST answer 400 to none in HTTP/1.1,
// to more than one, or to a value that is no Host; taking the first of two would let a proxy and this server read
// other hosts). HTTP/1.0 has no Host rule: without one it is judged as an empty Host.
std::string host_fault(const RequestHead& head) {
  if (head.host_lines == 0 && head.http11)
    return "Host: an HTTP/1.1 request must have a Host header line (RFC 9112 section 3.2)";
  if (head.host_lines > 1)
    return "Host: the request has " + std::to_string(head.host_lines) +
           " Host header lines, and HTTP allows one (RFC 9112 section 3.2)";
  if (!valid_host(head.host))
    return "Host " + quoted_header(head.host) + " is not a host name with an optional :port (RFC 9112 section 3.2)";
  return "";
}

// /api/video/ID (GET: its status, DELETE: cancel it) and /api/video/ID.mp4 (GET: the finished video).
Decision video_route(const std::string& method, std::string id, Decision d) {
  const bool mp4 = id.size() > 4 && id.compare(id.size() - 4, 4, ".mp4") == 0;
  if (mp4) id.resize(id.size() - 4);
  if (id.empty() || !std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); })) {
    d.action = Action::refuse, d.status = 404, d.message = "no such video: the ID in /api/video/ID is a number";
    return d;
  }
  if (!all_digits(id)) {  // more digits than any job's id (they count from 1, --max-video-jobs at a time)
    d.action = Action::refuse, d.status = 404, d.message = "no video " + id.substr(0, 20);
    return d;
  }
  d.video = std::stoi(id);
  if (method == "GET") return d.action = mp4 ? Action::video_download : Action::video_status, d;
  if (method == "DELETE" && !mp4) return d.action = Action::video_cancel, d;
  d.action = Action::refuse, d.status = 405, d.message = "method not allowed here";
  return d;
}

// The route's answer once the request may be served: the page, the scene, a render (its query read) or 404/405.
Decision route(const std::string& method, const Target& target, Decision d) {
  const bool get = method == "GET", post = method == "POST";
  const std::string& path = target.path;
  auto refuse = [&d](int status, const std::string& message) {
    d.action = Action::refuse, d.status = status, d.message = message;
    return d;
  };
  if (path == "/" && get) return d.action = Action::page, d;
  if (path == "/api/scene" && get) {
    const auto scene = target.query.find("scene");  // checked against the scenes when answered
    if (scene != target.query.end() &&
        (scene->second.empty() || scene->second.size() > 6 || !all_digits(scene->second)))
      return refuse(400, "scene: give ?scene=N, a scene index (GET /api/scenes)");
    if (scene != target.query.end()) d.scene = std::stoi(scene->second);
    return d.action = Action::scene, d;
  }
  if (path == "/api/scenes" && get) return d.action = Action::scenes, d;
  if (path == "/api/render" && post) {
    if (target.query.count("format")) {
      const std::string& format = target.query.at("format");
      if (format != "png" && format != "jpeg") return refuse(400, "format: png or jpeg");
      d.jpeg = format == "jpeg";
    }
    if (target.query.count("quality")) {
      const std::string& q = target.query.at("quality");
      if (q.empty() || q.size() > 3 || !all_digits(q) || std::stoi(q) < 1 || std::stoi(q) > 100)
        return refuse(400, "quality: an integer from 1 to 100");
      d.quality = std::stoi(q);
    }
    if (target.query.count("side")) {
      const std::string& side = target.query.at("side");
      if (side != "a" && side != "b") return refuse(400, "side: a or b (b: --compare-model / --compare-state)");
      d.side_b = side == "b";
    }
    return d.action = Action::render, d;
  }
  const std::string prefix = "/api/video/";
  if (path == "/api/video" || path.compare(0, prefix.size(), prefix) == 0) {
    // Every video route names its client: the stream a job belongs to (another client's job is not found).
    const auto client = target.query.find("client");
    if (client == target.query.end() || !all_digits(client->second))
      return refuse(400, "client: give ?client=N, the \"client\" of your stream's scene message");
    d.client = std::stoi(client->second);
    if (path != "/api/video") return video_route(method, path.substr(prefix.size()), d);
    if (!post) return refuse(405, "method not allowed here (POST a camera path)");
    return d.action = Action::video_start, d;
  }
  if (path == "/api/path/interpolate") return post ? (d.action = Action::path_interpolate, d) : refuse(405, "POST it");
  if (path == "/api/paths") return get ? (d.action = Action::path_list, d) : refuse(405, "method not allowed here");
  const std::string paths = "/api/paths/";
  if (path.compare(0, paths.size(), paths) == 0) {
    d.name = path.substr(paths.size());
    if (!get && !post) return refuse(405, "method not allowed here (GET or POST a saved path)");
    const auto replace = target.query.find("replace");
    d.replace = post && replace != target.query.end() && replace->second == "1";
    return d.action = get ? Action::path_load : Action::path_save, d;
  }
  if (path == "/" || path == "/api/scene" || path == "/api/scenes" || path == "/api/render")
    return refuse(405, "method not allowed here");
  return refuse(404,
                "not found (the page is /, the API /api/scene, /api/scenes, /api/render, /api/video, "
                "/api/path/interpolate and /api/paths)");
}

}  // namespace

bool valid_host(std::string_view host) {
  std::string_view name = host, port;
  bool literal = false;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    name = host.substr(1, close - 1), port = host.substr(close + 1), literal = true;
    if (!port.empty() && port.front() != ':') return false;
  } else {
    port = host.substr(std::min(host.find(':'), host.size()));
    name = host.substr(0, host.size() - port.size());
  }
  if (!port.empty()) port.remove_prefix(1);  // the ':'; an empty port is allowed (RFC 3986: *DIGIT)
  return host_name(name, literal) &&
         std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool loopback_host(std::string_view host) {
  std::string_view name = host, port;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    name = host.substr(1, close - 1);
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !all_digits(rest.substr(1)))) return false;
    return name == "::1";
  }
  const size_t colon = host.find(':');
  if (colon != std::string_view::npos) {
    name = host.substr(0, colon), port = host.substr(colon + 1);
    if (!all_digits(port)) return false;
  }
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower == "localhost" || loopback_ipv4(lower);
}

Decision screen_request(const RequestHead& head, const ServerRules& rules) {
  const Target target = parse_target(head.target);
  const bool has_body = head.content_length > 0 || head.transfer_encoding;
  Decision d;
  auto refuse = [&d, has_body](int status, const std::string& message) {
    d.action = Action::refuse, d.status = status, d.message = message;
    d.keep_alive = d.authorized && !has_body;
    return d;
  };
  if (const std::string fault = host_fault(head); !fault.empty()) return refuse(400, fault);
  if (rules.token.empty() && !loopback_host(head.host))
    return refuse(403, "Host " + quoted_header(head.host) +
                           " is not a loopback name: without a token lact serve answers only requests sent to "
                           "127.0.0.1, localhost or [::1] (a web page whose name resolves here must not read it)");
  d.authorized = rules.token.empty() || same_token(request_token(target, head.authorization), rules.token);
  if (!d.authorized)
    return refuse(401, "missing or wrong token: open the URL lact serve printed (it ends in ?token=...)");
  if (head.transfer_encoding)
    return refuse(411, "a request body must come with Content-Length (Transfer-Encoding is not read)");
  const bool post = head.method == "POST";
  const bool video = post && (target.path == "/api/video" || target.path == "/api/path/interpolate" ||
                              target.path.compare(0, 11, "/api/paths/") == 0);
  if (has_body && !(post && target.path == "/api/render") && !video)
    return refuse(400,
                  "this request takes no body (only POST /api/render, /api/video, /api/path/interpolate and "
                  "/api/paths/NAME have one)");
  const size_t max_body = video ? rules.max_video_body : rules.max_body;
  if (head.content_length > max_body)
    return refuse(413, "request too large (at most " + std::to_string(max_body) + " bytes of body)");
  if (head.upgrade) {  // a refused upgrade closes (as the handshake never completes)
    if (target.path != "/stream")
      refuse(404, "the stream is at /stream");
    else if (!origin_allowed(head.origin, head.host))
      refuse(403, "the stream is only for the page this server sent (Origin " + quoted_header(head.origin) +
                      " is not " + quoted_header(head.host) + ")");
    else
      return d.action = Action::stream, d;
    d.keep_alive = false;
    return d;
  }
  if (target.path == "/stream")
    return refuse(426, "/stream is a WebSocket: connect with Upgrade: websocket (ws://HOST/stream?token=T)");
  d.keep_alive = true;
  d = route(head.method, target, d);
  if (d.action == Action::refuse && has_body) d.keep_alive = false;  // its body is never read
  return d;
}

std::string quoted_header(std::string_view value) { return terminal_text(value.substr(0, 200)); }

std::string json_text(const nlohmann::json& value) {
  try {
    return value.dump();
  } catch (const nlohmann::json::type_error&) {  // 316: a string that is not UTF-8
    return with_utf8_strings(value).dump();
  }
}

std::string error_json(const std::string& message) { return json_text(nlohmann::json{{"error", message}}) + "\n"; }

}  // namespace lact::serve
