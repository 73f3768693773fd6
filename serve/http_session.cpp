// One HTTP connection to `lact serve`: the token, the page, the scene, the render API, and the upgrade to a stream
// (docs/serve.md). Requests are bounded (8 KiB of header, --max-side frames, 64 KiB of body, a request rate, an
// idle timeout) and each is answered: a refusal is a status with one line saying why.
#include "serve/http_session.h"

#include "core/error.h"
#include "serve/frame_encoding.h"
#include "serve/page.h"

namespace lact::serve {

namespace {

constexpr auto kIdleTimeout = std::chrono::seconds(30);
constexpr unsigned kHeaderLimit = 8192;

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(ServerContext& context, tcp::socket socket)
      : context_(context), stream_(std::move(socket)), rate_(context.hub.options().max_rate) {
    ++context_.connections;
  }
  ~HttpSession() { --context_.connections; }

  void run() { read(); }
  // Answers the first request with 503 and closes (too many connections).
  void refuse() {
    refusing_ = true;
    read();
  }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(context_.hub.limits().max_message);
    stream_.expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&HttpSession::received, shared_from_this()));
  }

  void received(beast::error_code error, size_t) {
    if (error == http::error::body_limit || error == http::error::header_limit)
      return reply(http::status::payload_too_large,
                   "request too large (at most " + std::to_string(context_.hub.limits().max_message) +
                       " bytes of body, " + std::to_string(kHeaderLimit) + " of header)",
                   false);
    if (error) return close();
    Request request = parser_->release();
    keep_alive_ = request.keep_alive();
    host_ = std::string(request[http::field::host]);
    if (refusing_)
      return reply(http::status::service_unavailable,
                   "too many connections: lact serve is serving its limit (--max-clients)", false);
    handle(std::move(request));
  }

  void handle(Request request);
  bool authorized(const Request& request, const Target& target);
  void upgrade(Request request);
  void render(const Request& request, const Target& target);
  void rendered(session::RenderedView view, bool jpeg, int quality);

  void reply(http::status status, const std::string& message, bool keep_alive = true) {
    nlohmann::json body{{"error", message}};
    respond(status, "application/json", body.dump() + "\n", keep_alive);
  }

  void respond(http::status status, const std::string& type, std::string body, bool keep_alive = true) {
    auto response = std::make_shared<http::response<http::string_body>>(status, 11);
    response->set(http::field::server, "lact serve");
    response->set(http::field::content_type, type);
    response->set(http::field::cache_control, "no-store");
    response->set("X-Content-Type-Options", "nosniff");
    response->set("X-Frame-Options", "DENY");
    response->set("Content-Security-Policy",
                  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src blob: data:; "
                  "connect-src 'self'" +
                      stream_source() + "; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    response->body() = std::move(body);
    response->keep_alive(keep_alive && keep_alive_);
    response->prepare_payload();
    http::async_write(stream_, *response, [self = shared_from_this(), response](beast::error_code error, size_t) {
      if (error || !response->keep_alive()) return self->close();
      self->read();
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

  ServerContext& context_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  RateLimit rate_;
  std::string host_;  // the request's Host header
  bool keep_alive_ = false, refusing_ = false;
};

bool HttpSession::authorized(const Request& request, const Target& target) {
  const std::string& token = context_.hub.token();
  if (token.empty()) return true;
  return same_token(request_token(target, std::string(request[http::field::authorization])), token);
}

void HttpSession::handle(Request request) {
  const Target target = parse_target(std::string(request.target()));
  if (!rate_.allow(context_.now()) || !context_.api_rate.allow(context_.now()))
    return reply(http::status::too_many_requests, "too many requests: slow down");
  if (!authorized(request, target))
    return reply(http::status::unauthorized,
                 "missing or wrong token: open the URL lact serve printed (it ends in ?token=...)", false);
  if (websocket::is_upgrade(request)) {
    if (target.path != "/stream") return reply(http::status::not_found, "the stream is at /stream", false);
    return upgrade(std::move(request));
  }
  const bool get = request.method() == http::verb::get, post = request.method() == http::verb::post;
  if (target.path == "/" && get) return respond(http::status::ok, "text/html; charset=utf-8", std::string(page_html()));
  if (target.path == "/api/scene" && get)
    return respond(http::status::ok, "application/json", context_.hub.scene().dump() + "\n");
  if (target.path == "/api/render" && post) return render(request, target);
  if (target.path == "/" || target.path == "/api/scene" || target.path == "/api/render")
    return reply(http::status::method_not_allowed, "method not allowed here");
  reply(http::status::not_found, "not found (the page is /, the API /api/scene and /api/render)");
}

void HttpSession::upgrade(Request request) {
  const std::string origin(request[http::field::origin]), host(request[http::field::host]);
  if (!origin_allowed(origin, host))
    return reply(http::status::forbidden,
                 "the stream is only for the page this server sent (Origin " + origin + " is not " + host + ")", false);
  const int max = context_.hub.options().max_clients;
  if (context_.hub.streams >= max)
    return reply(http::status::service_unavailable,
                 "lact serve already streams to " + std::to_string(max) +
                     " clients (--max-clients): close one, or restart it with a larger --max-clients",
                 false);
  start_stream(context_, std::move(stream_), std::move(request));
}

void HttpSession::render(const Request& request, const Target& target) {
  bool jpeg = false;
  int quality = 90;
  if (target.query.count("format")) {
    const std::string& format = target.query.at("format");
    if (format != "png" && format != "jpeg") return reply(http::status::bad_request, "format: png or jpeg");
    jpeg = format == "jpeg";
  }
  if (target.query.count("quality")) {
    const std::string& q = target.query.at("quality");
    if (q.empty() || q.size() > 3 || q.find_first_not_of("0123456789") != std::string::npos || std::stoi(q) < 1 ||
        std::stoi(q) > 100)
      return reply(http::status::bad_request, "quality: an integer from 1 to 100");
    quality = std::stoi(q);
  }
  if (!context_.hub.ready()) return reply(http::status::service_unavailable, "the scene is still being encoded");
  session::RenderRequest r;
  try {
    const nlohmann::json body = nlohmann::json::parse(request.body(), nullptr, false);
    if (body.is_discarded()) throw Error("body", "not JSON (expected one camera-path frame)");
    r.camera = client_camera(body, context_.hub.limits(), "body");
  } catch (const std::exception& e) {
    return reply(http::status::bad_request, e.what());
  }
  // Its own channel: the render thread hands the view back on the network thread.
  auto channel = std::make_shared<int>(-1);
  *channel = context_.hub.open_channel([self = shared_from_this(), channel, jpeg, quality](session::RenderedView v) {
    self->context_.hub.close_channel(*channel);
    self->rendered(std::move(v), jpeg, quality);
  });
  context_.hub.submit(*channel, r);
}

void HttpSession::rendered(session::RenderedView view, bool jpeg, int quality) {
  if (!view.error.empty()) return reply(http::status::unprocessable_entity, "render: " + view.error);
  try {
    if (jpeg) return respond(http::status::ok, "image/jpeg", encode_jpeg(view.image, quality));
    respond(http::status::ok, "image/png", encode_png(view.image));
  } catch (const std::exception& e) {
    reply(http::status::internal_server_error, e.what());
  }
}

}  // namespace

void serve_connection(ServerContext& context, tcp::socket socket) {
  auto session = std::make_shared<HttpSession>(context, std::move(socket));
  if (context.connections > context.max_connections)
    session->refuse();
  else
    session->run();
}

}  // namespace lact::serve
