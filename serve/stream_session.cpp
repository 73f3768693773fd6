// One browser's WebSocket stream: cameras in (JSON text), frames out (one binary message each: a 4-byte
// little-endian header length, the JSON header, then the images it lists). The client's newest camera wins on
// the render thread, and on the way out a frame not yet being written is replaced by a newer one.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <deque>
#include <optional>

#include "serve/frame_encoding.h"
#include "serve/network.h"
#include "serve/request_rules.h"
#include "session/frame_stats.h"
#include "system/error.h"

namespace lact::serve {

namespace {

constexpr int kMovingJpegQuality = 85;
constexpr size_t kMaxQueuedMessages = 64;  // a client that reads nothing is closed past this
constexpr size_t kReadChunk = 4096;        // the most of a message read at once
// TCP keepalive on a stream: a peer that is gone (a laptop that slept or lost its network) answers no probe and
// is closed after the first probe (this long idle) and three more, one every 5 s, so it gives back its
// --max-clients place. A live client that only waits (a script holding a video job) is answered by its system
// whether it reads or not: an idle timeout of the WebSocket's own would close it.
constexpr int kKeepAliveIdleSeconds = 10, kKeepAliveIntervalSeconds = 5, kKeepAliveProbes = 3;
// A message the client has not taken in this long closes the stream: it reads nothing (its frames are already
// held back, so it costs no renders; this frees its place).
constexpr auto kWriteStall = std::chrono::seconds(20);

void enable_keepalive(int socket) {
  const int on = 1, idle = kKeepAliveIdleSeconds, interval = kKeepAliveIntervalSeconds, probes = kKeepAliveProbes;
  ::setsockopt(socket, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);  // best effort: a failure leaves it as before
  ::setsockopt(socket, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(socket, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(socket, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
}

class StreamSession : public std::enable_shared_from_this<StreamSession> {
 public:
  StreamSession(ServerContext& context, beast::tcp_stream stream)
      : context_(context), ws_(std::move(stream)), rate_(context.hub.options().max_rate), stall_(context.io) {
    ++context_.hub.streams;
    ++context_.connections;
  }
  ~StreamSession() {
    --context_.hub.streams;
    --context_.connections;
    context_.hub.close_channel(channel_);
  }

  void run(Request request) {
    beast::get_lowest_layer(ws_).expires_never();  // the stream's own timeouts from here on
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    enable_keepalive(beast::get_lowest_layer(ws_).socket().native_handle());
    // No bound of Beast's (0): it closes with 1009 and no reason, on a frame's declared length alone. received()
    // counts a message as its chunks come in and closes past the limit saying why.
    ws_.read_message_max(0);
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& response) { response.set(http::field::server, "lact serve"); }));
    ws_.async_accept(request, beast::bind_front_handler(&StreamSession::accepted, shared_from_this()));
  }

 private:
  struct Outgoing {
    std::string data;
    bool binary = false;
    bool frame = false;
    int side = 0;  // a frame's side (0: a, 1: b)
  };

  void accepted(beast::error_code error) {
    if (error) return;
    std::weak_ptr<StreamSession> self = weak_from_this();
    channel_ = context_.hub.open_channel(
        [self](session::RenderedView view) {
          if (auto s = self.lock()) s->rendered(std::move(view));
        },
        [self](const nlohmann::json& status) {
          if (auto s = self.lock()) s->send_text(json_text(status));
        },
        [self](session::RenderedView view) {
          if (auto s = self.lock()) s->rendered(std::move(view), 1);
        });
    nlohmann::json scene = context_.hub.scene();
    scene["type"] = "scene";
    scene["client"] = channel_;  // names this stream in POST /api/video?client=N (its job's progress comes here)
    send_text(json_text(scene));
    read();
  }

  // A message is read a chunk at a time, so that one over the limit is known before it is all in memory.
  void read() {
    ws_.async_read_some(buffer_, kReadChunk, beast::bind_front_handler(&StreamSession::received, shared_from_this()));
  }

  void received(beast::error_code error, size_t) {
    if (error) return close();  // closed, a timeout, text that is not UTF-8 (1007): the stream ends
    if (buffer_.size() > context_.hub.limits().max_message)
      return close_saying(websocket::close_code::too_big,
                          "a message over " + std::to_string(context_.hub.limits().max_message) + " bytes");
    if (!ws_.is_message_done()) return read();
    const bool text = ws_.got_text();
    std::string message = beast::buffers_to_string(buffer_.data());
    buffer_.consume(buffer_.size());
    if (!rate_.allow(context_.now())) {
      send_error("too many messages (at most " + std::to_string(static_cast<int>(context_.hub.options().max_rate)) +
                 " per second): this one was dropped");
    } else if (!text) {
      send_error("message: binary messages are not accepted (send JSON text)");
    } else {
      handle(message);
    }
    read();
  }

  void handle(const std::string& message) {
    session::RenderRequest request;
    Hub& hub = context_.hub;
    try {
      if (const std::optional<int> scene = scene_message(message, hub.scene_count(), hub.limits()))
        return moved_to(*scene);
      const CameraMessage m =
          parse_camera_message(message, hub.source(hub.channel_scene(channel_)).cameras, hub.limits());
      request.camera = m.camera, request.view = m.view, request.tag = camera_tag(m);
    } catch (const std::exception& e) {
      return send_error(e.what());
    }
    // A failed scene never renders: held, the camera would get no answer at all.
    if (const std::optional<std::string> why = hub.failure(hub.channel_scene(channel_))) return send_error(*why);
    // Resting on the frame just shown: send it again losslessly rather than render it again (on each side).
    bool render_side[2] = {true, true};
    for (int side = 0; side < 2; ++side) {
      const std::optional<session::RenderedView>& last = last_[side];
      if (!tag_moving(request.tag) && last && session::same_camera(last->request.camera, request.camera) &&
          last->request.view == request.view && tag_moving(last->request.tag)) {
        session::RenderedView again = *last;
        again.request.tag = request.tag;
        rendered(std::move(again), side);
        render_side[side] = false;
        held_[side].reset();  // an older camera held back must not follow it
      }
    }
    hold_back(request, render_side);
    if (render_side[0] || render_side[1]) context_.hub.submit(channel_, request, render_side[0], render_side[1]);
  }

  // A side whose last frame still waits behind the one being written renders nothing more for now: its camera is
  // held, the newest winning, and sent to the render thread once that frame goes out. A client that reads slowly
  // (or not at all) then costs one render per frame it takes, not one per camera it sends.
  void hold_back(const session::RenderRequest& request, bool render_side[2]) {
    for (int side = 0; side < 2; ++side) {
      if (!render_side[side]) continue;
      held_[side].reset();
      if (frame_waiting(side)) held_[side] = request, render_side[side] = false;
    }
  }

  // A frame of `side` in the queue that is not being written yet.
  bool frame_waiting(int side) const {
    for (size_t i = writing_ ? 1 : 0; i < queue_.size(); ++i)
      if (queue_[i].frame && queue_[i].side == side) return true;
    return false;
  }

  // The held cameras of the sides whose waiting frame has gone out (or been replaced by a newer render).
  void submit_held() {
    for (int side = 0; side < 2; ++side)
      if (held_[side] && !frame_waiting(side) && !closed_) {
        context_.hub.submit(channel_, *held_[side], side == 0, side == 1);
        held_[side].reset();
      }
  }

  // The client moved to another scene: its description (as the first message), and no frame of the old one
  // sent again as this one's.
  void moved_to(int scene) {
    nlohmann::json description = context_.hub.select_scene(channel_, scene);
    description["type"] = "scene";
    description["client"] = channel_;
    last_[0].reset(), last_[1].reset();
    held_[0].reset(), held_[1].reset();
    send_text(json_text(description));
  }

  // A result of side a (0) or, when comparing, side b (1).
  void rendered(session::RenderedView view, int side = 0) {
    if (!view.error.empty()) return send_error(std::string(side ? "side b: " : "") + "render: " + view.error);
    const double now = context_.now();
    fps_[side].tick(now);
    const int64_t tag = view.request.tag;
    try {
      const bool moving = tag_moving(tag);
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::pair<std::string, std::string>> images;  // name, bytes
      images.emplace_back("render", moving ? encode_jpeg(view.image, kMovingJpegQuality) : encode_png(view.image));
      if (view.measured && tag_truth(tag)) images.emplace_back("truth", encode_png(view.truth));
      if (view.measured && tag_error(tag)) images.emplace_back("error", encode_png(view.error_map));
      nlohmann::json header = frame_header(view, moving ? "jpeg" : "png", fps_[side].per_second(now));
      if (context_.hub.compare()) header["side"] = side ? "b" : "a";
      header["encode_ms"] = 1000 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      for (const auto& [name, bytes] : images) header["images"].push_back({{"name", name}, {"bytes", bytes.size()}});
      const std::string text = json_text(header);
      Outgoing out{std::string(4, '\0'), true, true, side};
      for (int i = 0; i < 4; ++i) out.data[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
      out.data += text;
      for (const auto& image : images) out.data += image.second;
      last_[side] = std::move(view);
      send(std::move(out));
    } catch (const std::exception& e) {
      send_error(std::string("encoding the frame: ") + e.what());
    }
  }

  // With this machine's paths dropped (serve/shown_paths.h), as every refusal of the HTTP routes.
  void send_error(const std::string& message) {
    send_text(json_text(nlohmann::json{{"type", "error"}, {"message", context_.hub.shown(message)}}));
  }
  void send_text(std::string text) { send(Outgoing{std::move(text), false, false}); }

  void send(Outgoing message) {
    if (closed_) return;
    // The newest frame wins on the way out too: replace a frame of its side still waiting (not the one being
    // written).
    if (message.frame)
      for (size_t i = writing_ ? 1 : 0; i < queue_.size(); ++i)
        if (queue_[i].frame && queue_[i].side == message.side) {
          queue_[i] = std::move(message);
          return;
        }
    if (queue_.size() >= kMaxQueuedMessages) return close();
    queue_.push_back(std::move(message));
    if (!writing_) write();
  }

  void write() {
    writing_ = true;
    ws_.binary(queue_.front().binary);
    ws_.async_write(asio::buffer(queue_.front().data),
                    beast::bind_front_handler(&StreamSession::written, shared_from_this()));
    stall_.expires_after(kWriteStall);
    stall_.async_wait([self = shared_from_this()](beast::error_code error) {
      if (!error && self->writing_) self->close(true);  // not cancelled by written(): the client took nothing
    });
  }

  void written(beast::error_code error, size_t) {
    writing_ = false;
    stall_.cancel();
    if (error) return close();
    queue_.pop_front();
    if (!queue_.empty() && !closed_) write();
    submit_held();
  }

  // Ends the stream with a close frame that says why (the page shows it).
  void close_saying(websocket::close_code code, const std::string& reason) {
    if (closed_) return;
    closed_ = true;
    context_.hub.close_channel(channel_);
    ws_.async_close(websocket::close_reason(code, reason), [self = shared_from_this()](beast::error_code) {
      beast::error_code ignored;
      beast::get_lowest_layer(self->ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  // `stalled`: also when a close frame is being sent (it waits behind the stalled write).
  void close(bool stalled = false) {
    if (closed_ && !stalled) return;
    closed_ = true;
    stall_.cancel();
    context_.hub.close_channel(channel_);  // a render in progress for it is dropped when it ends
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  ServerContext& context_;
  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
  int channel_ = -1;
  RateLimit rate_;
  session::RateMeter fps_[2];                      // per side
  std::optional<session::RenderedView> last_[2];   // per side
  std::optional<session::RenderRequest> held_[2];  // per side: the newest camera held back (hold_back)
  asio::steady_timer stall_;                       // the write in progress must end before it fires
  std::deque<Outgoing> queue_;
  bool writing_ = false, closed_ = false;
};

}  // namespace

void start_stream(ServerContext& context, beast::tcp_stream stream, Request request) {
  std::make_shared<StreamSession>(context, std::move(stream))->run(std::move(request));
}

}  // namespace lact::serve
