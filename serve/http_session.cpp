// One HTTP connection to `lact serve`: the token, the page, the scene, the render API, and the upgrade to a stream
// (docs/guide/serve.md). The header is read first and judged (serve/request_rules.h) before any body byte: a body the
// API never takes (chunked, on a GET, too large) is never read. A connection without the token has 10 s for its
// header and is the first closed when connections run short; only requests with the token spend the shared
// request budget. Each request is answered: a refusal is a status with one line saying why.
#include "serve/http_session.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "serve/frame_encoding.h"
#include "serve/http_head.h"
#include "serve/page.h"
#include "serve/path_routes.h"
#include "serve/write_while_moving.h"
#include "system/error.h"
#include "system/file_io.h"
#include "system/terminal_text.h"

namespace lact::serve {

namespace {

constexpr auto kIdleTimeout = std::chrono::seconds(30);      // between requests, once the token was shown,
                                                             // and while a response's bytes do not move
constexpr auto kUnprovenTimeout = std::chrono::seconds(10);  // a whole header, before (a slowloris ends here)
constexpr auto kBodyTimeout = std::chrono::seconds(10);      // a body of at most 64 KiB
constexpr unsigned kHeaderLimit = 8192;

// kIdleTimeout, or LACT_SERVE_IDLE_TIMEOUT_MS (a number of milliseconds from 1 to 3600000) for tests only, so that
// a test of the timeout takes seconds (docs/guide/serve.md). Read once; check_serve_environment reads it first, at
// start-up, so any other value is refused there, before a session asks.
std::chrono::steady_clock::duration idle_timeout() {
  static const std::chrono::steady_clock::duration timeout = [] {
    const char* text = std::getenv("LACT_SERVE_IDLE_TIMEOUT_MS");
    if (!text || *text == '\0') return std::chrono::steady_clock::duration(kIdleTimeout);
    char* end = nullptr;
    errno = 0;
    const long ms = std::strtol(text, &end, 10);
    if (*end != '\0' || errno != 0 || ms <= 0 || ms > 3600000)
      throw Error("LACT_SERVE_IDLE_TIMEOUT_MS", "'" + terminal_text(std::string(text).substr(0, 40)) +
                                                    "' is not a number of milliseconds from 1 to 3600000 (for "
                                                    "tests; unset: 30 s)");
    return std::chrono::steady_clock::duration(std::chrono::milliseconds(ms));
  }();
  return timeout;
}

}  // namespace

void check_serve_environment() { idle_timeout(); }

// Not polymorphic: ServerContext::drop_oldest_unproven calls drop() on the list's pointer without a virtual call
// (serve/network.h says why).
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(ServerContext& context, tcp::socket socket)
      : context_(context), stream_(std::move(socket)), rate_(context.hub.options().max_rate) {
    ++context_.connections;
    listed_ = context_.unproven.insert(context_.unproven.end(), this);
  }
  ~HttpSession() {
    unlist();
    uncount();
  }

  void run() { read_header(); }

  void drop() {  // closes it now; its pending handlers then end it
    unlist();
    uncount();
    stream_.close();
  }

 private:
  void read_header() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    // No body limit while the header is read: Beast would refuse a Content-Length over it before the rules
    // judged the header (a camera path's 1 MiB got the 64 KiB 413). The rules refuse a body over its route's
    // limit unread; the body read then gets that limit. (Not boost::none: Beast 1.74 takes any length as over it.)
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    if (proven_)
      stream_.expires_after(idle_timeout());
    else
      stream_.expires_after(kUnprovenTimeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&HttpSession::header_read, shared_from_this()));
  }

  void header_read(beast::error_code error, size_t);
  void read_body();
  void body_read(beast::error_code error, size_t);
  void act();
  void upgrade();
  void render();
  void video();
  void download_video();
  void paths();
  void start_render(const Camera& camera, int scene);
  bool client_gone();
  void rendered(session::RenderedView view);

  // The most body the decided route reads: a camera path's (saved, rendered as a video, interpolated) or any
  // other request's.
  size_t body_limit() const {
    return takes_path_body(decision_.action) ? ServerRules{}.max_video_body : context_.hub.limits().max_message;
  }

  void refuse_too_large(bool header) {
    reply(http::status::payload_too_large,
          header ? "request too large (at most " + std::to_string(kHeaderLimit) + " bytes of header)"
                 : "request too large (at most " + std::to_string(body_limit()) + " bytes of body)",
          false);
  }

  // Every refusal goes out here, with this machine's paths dropped from it (serve/shown_paths.h).
  void reply(http::status status, const std::string& message, bool keep_alive = true) {
    respond(status, "application/json", error_json(context_.hub.shown(message)), keep_alive);
  }

  void respond(http::status status, const std::string& type, std::string body, bool keep_alive = true) {
    auto response = std::make_shared<http::response<http::string_body>>(status, 11);
    response->body() = std::move(body);
    send(std::move(response), type, keep_alive);
  }

  // Any body: a string, or a file read from disk a few KiB at a time as the socket takes it.
  template <class Body>
  void send(std::shared_ptr<http::response<Body>> response, const std::string& type, bool keep_alive = true) {
    response->set(http::field::server, "lact serve");
    response->set(http::field::content_type, type);
    response->set(http::field::cache_control, "no-store");
    response->set("X-Content-Type-Options", "nosniff");
    response->set("X-Frame-Options", "DENY");
    response->set("Content-Security-Policy",
                  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src blob: data:; "
                  "connect-src 'self'" +
                      stream_source() + "; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    response->keep_alive(keep_alive && keep_alive_);
    response->prepare_payload();
    // A client that takes nothing for the idle timeout, or less than the floor in a long window, is closed
    // (serve/write_while_moving.h); one whose bytes keep moving never is.
    const bool keep = response->keep_alive();
    write_while_moving(stream_, std::move(response), idle_timeout(),
                       [self = shared_from_this(), keep](beast::error_code error) {
                         if (error || !keep) return self->close();
                         self->read_header();
                       });
  }

  // The stream's ws:// address for the page's connect-src (browsers before CSP 3 do not count it as 'self'),
  // from the Host header when it is a plain host[:port].
  std::string stream_source() const {
    if (host_.empty() || host_.size() > 255 ||
        host_.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") !=
            std::string::npos)
      return "";
    return " ws://" + host_ + " wss://" + host_;
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  // Off the list of connections without the token (it showed it, or it ends).
  void unlist() {
    if (proven_) return;
    proven_ = true;
    context_.unproven.erase(listed_);
  }
  void uncount() {
    if (counted_) --context_.connections;
    counted_ = false;
  }

  ServerContext& context_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Decision decision_;  // of the request being served
  RateLimit rate_;
  std::string host_;  // the request's Host header
  std::list<HttpSession*>::iterator listed_;
  bool keep_alive_ = false, proven_ = false, counted_ = true;
};

void HttpSession::header_read(beast::error_code error, size_t) {
  if (error == http::error::header_limit) return refuse_too_large(true);
  if (const std::string why = malformed_request(error); !why.empty())
    return reply(http::status::bad_request, why, false);
  if (error) return close();
  keep_alive_ = parser_->get().keep_alive();
  const RequestHead head = request_head(*parser_);
  host_ = head.host;
  decision_ = screen_request(head, ServerRules{context_.hub.token(), context_.hub.limits().max_message});
  if (decision_.authorized) {
    unlist();
    // Only a request with the token spends the shared budget: clients without it cannot use it up.
    if (!rate_.allow(context_.now()) || !context_.api_rate.allow(context_.now()))
      return reply(http::status::too_many_requests, "too many requests: slow down",
                   !takes_body(decision_.action));  // a body is not read then
  }
  if (decision_.action == Action::refuse)
    return reply(static_cast<http::status>(decision_.status), decision_.message, decision_.keep_alive);
  if (!takes_body(decision_.action)) return act();
  parser_->body_limit(body_limit());
  if (!beast::iequals(parser_->get()[http::field::expect], "100-continue")) return read_body();
  // A client that asks waits for this before it sends the body (curl waits a second without it). Written as every
  // response is: a client still reading a pipelined response's tail is not cut while those bytes move.
  auto go_on = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
  write_while_moving(stream_, std::move(go_on), idle_timeout(), [self = shared_from_this()](beast::error_code error) {
    if (error) return self->close();
    self->read_body();
  });
}

void HttpSession::read_body() {
  stream_.expires_after(kBodyTimeout);
  http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&HttpSession::body_read, shared_from_this()));
}

void HttpSession::body_read(beast::error_code error, size_t) {
  if (error == http::error::body_limit) return refuse_too_large(false);
  if (error) return close();
  act();
}

void HttpSession::act() {
  switch (decision_.action) {
    case Action::page:
      return respond(http::status::ok, "text/html; charset=utf-8", std::string(page_html()));
    case Action::scene:
      if (decision_.scene >= context_.hub.scene_count())
        return reply(http::status::not_found,
                     "scene: no scene " + std::to_string(decision_.scene) + " (GET /api/scenes)");
      return respond(http::status::ok, "application/json", json_text(context_.hub.scene(decision_.scene)) + "\n");
    case Action::scenes:
      return respond(http::status::ok, "application/json", json_text(context_.hub.scene_list()) + "\n");
    case Action::render:
      return render();
    case Action::stream:
      return upgrade();
    case Action::video_start:
    case Action::video_status:
    case Action::video_cancel:
    case Action::video_download:
      return video();
    case Action::path_interpolate:
    case Action::path_list:
    case Action::path_load:
    case Action::path_save:
      return paths();
    case Action::refuse:
      break;
  }
  reply(static_cast<http::status>(decision_.status), decision_.message, decision_.keep_alive);
}

void HttpSession::upgrade() {
  const int max = context_.hub.options().max_clients;
  if (context_.hub.streams >= max)
    return reply(http::status::service_unavailable,
                 "lact serve already streams to " + std::to_string(max) +
                     " clients (--max-clients): close one, or restart it with a larger --max-clients",
                 false);
  start_stream(context_, std::move(stream_), parser_->release());
}

// The video jobs (serve/video_jobs.h): start, status, cancel, download.
void HttpSession::video() {
  VideoJobs& videos = context_.hub.videos();
  if (decision_.action != Action::video_start && !videos.owns(decision_.video, decision_.client))
    return reply(http::status::not_found,
                 "no video " + std::to_string(decision_.video) + " of client " + std::to_string(decision_.client));
  try {
    switch (decision_.action) {
      case Action::video_start:
        return respond(http::status::accepted, "application/json",
                       json_text(context_.hub.start_video(decision_.client, parser_->get().body())) + "\n");
      case Action::video_status:
        return respond(http::status::ok, "application/json", json_text(videos.status(decision_.video)) + "\n");
      case Action::video_cancel:
        if (!videos.cancel(decision_.video)) return reply(http::status::conflict, "the video is already finished");
        return respond(http::status::ok, "application/json", json_text(videos.status(decision_.video)) + "\n");
      default:
        return download_video();
    }
  } catch (const VideoRefusal& refusal) {
    reply(static_cast<http::status>(refusal.status), refusal.message);
  }
}

// The path editor's routes (serve/path_routes.h): interpolation, and named paths saved under --out/paths.
void HttpSession::paths() {
  const ServeOptions& options = context_.hub.options();
  PathLimits limits;
  limits.max_frames = options.max_video_frames, limits.max_side = context_.hub.limits().max_side;
  limits.patch = context_.hub.limits().patch;
  const std::string folder = options.out + "/paths", &body = parser_->get().body();
  try {
    nlohmann::json answer;
    if (decision_.action == Action::path_load)
      return respond(http::status::ok, "application/json", load_path(folder, decision_.name, limits));
    if (decision_.action == Action::path_interpolate) answer = interpolate_body(body, limits);
    if (decision_.action == Action::path_list) answer = list_paths(folder);
    if (decision_.action == Action::path_save)
      answer = save_path(folder, decision_.name, body, decision_.replace, limits);
    respond(decision_.action == Action::path_save ? http::status::created : http::status::ok, "application/json",
            json_text(answer) + "\n");
  } catch (const PathRefusal& refusal) {
    reply(static_cast<http::status>(refusal.status), refusal.message);
  } catch (const std::exception& e) {  // not expected: every bad body is a PathRefusal
    reply(http::status::internal_server_error, e.what());
  }
}

void HttpSession::download_video() {
  const std::string file = context_.hub.videos().file(decision_.video);
  if (file.empty()) return reply(http::status::not_found, "no finished video with that id");
  // Streamed from disk: a download holds a few KiB, not the video (48 connections would otherwise hold 48 copies).
  auto response = std::make_shared<http::response<http::file_body>>(http::status::ok, 11);
  try {
    struct stat info {};
    beast::file opened;
    opened.native_handle(open_regular_file(file, info));  // not a folder, FIFO or device; owned by `opened` now
    beast::error_code error;
    response->body().reset(std::move(opened), error);
    if (error) throw Error(file, "cannot read its size (" + error.message() + ")");
  } catch (const std::exception& e) {
    return reply(http::status::gone, std::string("the video is no longer there (") + e.what() + ")");
  }
  send(std::move(response), "video/mp4");
}

void HttpSession::render() {
  Hub& hub = context_.hub;
  Camera camera;
  int scene = 0;
  try {
    camera = render_body_camera(parser_->get().body(), hub.limits());
    scene = body_scene(parser_->get().body(), hub.scene_count()).value_or(0);
  } catch (const std::exception& e) {
    return reply(http::status::bad_request, e.what());
  }
  if (const std::optional<Hub::Unavailable> why = hub.unavailable(scene))
    return reply(static_cast<http::status>(why->status), why->message);
  if (decision_.side_b && !hub.compare())
    return reply(http::status::not_found, "side: no side b (start lact serve with --compare-model or --compare-state)");
  if (decision_.side_b && !hub.compare()->ready())
    return reply(http::status::service_unavailable, "side b is still being encoded: ask again");
  context_.queue_render([self = shared_from_this(), camera, scene] {
    if (self->client_gone()) return false;  // closed while waiting: its render would only delay the others
    self->start_render(camera, scene);
    return true;
  });
}

// Whether the client closed the connection (or reset it): a look at the socket without waiting or reading.
// A client that only shut down its sending side counts as gone too: an API client waits for its answer
// with the connection open.
bool HttpSession::client_gone() {
  char byte = 0;
  const ssize_t n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// Its own channel: the render thread hands the view back on the network thread.
void HttpSession::start_render(const Camera& camera, int scene) {
  session::RenderRequest request;
  request.camera = camera;
  auto channel = std::make_shared<int>(-1);
  const Hub::OnView done = [self = shared_from_this(), channel](session::RenderedView v) {
    self->context_.hub.close_channel(*channel);
    self->context_.render_done();
    self->rendered(std::move(v));
  };
  const bool side_b = decision_.side_b;  // one side's render: a, or b of the comparison
  *channel = context_.hub.open_channel(done, {}, side_b ? done : Hub::OnView());
  context_.hub.select_scene(*channel, scene);
  context_.hub.submit(*channel, request, !side_b, side_b);
}

void HttpSession::rendered(session::RenderedView view) {
  if (!view.error.empty()) return reply(http::status::unprocessable_entity, "render: " + view.error);
  try {
    if (decision_.jpeg) return respond(http::status::ok, "image/jpeg", encode_jpeg(view.image, decision_.quality));
    respond(http::status::ok, "image/png", encode_png(view.image));
  } catch (const std::exception& e) {
    reply(http::status::internal_server_error, e.what());
  }
}

namespace {

// Past the cap with every connection holding the token: a fixed 503, written without waiting (a few hundred
// bytes fit any socket's buffer), and closed, so a refused connection holds no descriptor.
void refuse_at_once(tcp::socket socket) {
  const std::string body = error_json("too many connections: lact serve is serving its limit (--max-clients)");
  const std::string response =
      "HTTP/1.1 503 Service Unavailable\r\nServer: lact serve\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  beast::error_code ignored;
  socket.non_blocking(true, ignored);
  socket.send(asio::buffer(response), 0, ignored);
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

}  // namespace

void serve_connection(ServerContext& context, tcp::socket socket) {
  if (context.connections >= context.max_connections && !context.drop_oldest_unproven())
    return refuse_at_once(std::move(socket));
  std::make_shared<HttpSession>(context, std::move(socket))->run();
}

bool ServerContext::drop_oldest_unproven() {
  if (unproven.empty()) return false;
  unproven.front()->drop();  // it leaves the list
  return true;
}

void ServerContext::queue_render(std::function<bool()> start_render) {
  renders_waiting.push_back(std::move(start_render));
  if (!api_rendering) start_next_render();
}

void ServerContext::render_done() {
  api_rendering = false;
  start_next_render();
}

void ServerContext::start_next_render() {
  api_rendering = false;
  while (!api_rendering && !renders_waiting.empty()) {
    std::function<bool()> next = std::move(renders_waiting.front());
    renders_waiting.pop_front();
    api_rendering = next();  // false: its client left, the next one goes
  }
}

void ServerContext::drop_waiting_renders() {
  std::deque<std::function<bool()>> waiting;
  waiting.swap(renders_waiting);  // their sessions end here, with the hub still there
}

}  // namespace lact::serve
