// lact serve's parts without a socket (serve/): the access rules (token, query, Origin, loopback, rate), the
// request rules (what a header alone decides), the checks of a client's camera message, the loop that outlives a
// failing connection, and the frame encodings against datasets' decoder.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/camera_geometry.h"
#include "datasets/camera_path_io.h"
#include "datasets/image_io.h"
#include "serve/access.h"
#include "serve/frame_encoding.h"
#include "serve/keep_serving.h"
#include "serve/messages.h"
#include "serve/request_rules.h"
#include "serve/shown_paths.h"
#include "system/error.h"

namespace lact::serve {
namespace {

TEST(Access, TokensAreRandomHexAndComparedWhole) {
  const std::string a = generate_token(), b = generate_token();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
  EXPECT_TRUE(same_token(a, a));
  EXPECT_FALSE(same_token(a.substr(0, 31), a));
  EXPECT_FALSE(same_token(a + "0", a));
  EXPECT_FALSE(same_token("", a));
  EXPECT_FALSE(same_token("", ""));  // an empty expected token is never matched (none is checked then)
}

TEST(Access, TargetsSplitIntoPathAndDecodedQuery) {
  const Target t = parse_target("/api/render?format=jpeg&quality=80&token=a%2Fb+c&bad=%zz&&=x");
  EXPECT_EQ(t.path, "/api/render");
  EXPECT_EQ(t.query.at("format"), "jpeg");
  EXPECT_EQ(t.query.at("quality"), "80");
  EXPECT_EQ(t.query.at("token"), "a/b c");
  EXPECT_EQ(t.query.count("bad"), 0u);  // a malformed escape is dropped, not guessed
  EXPECT_EQ(t.query.size(), 3u);
  EXPECT_EQ(parse_target("/").path, "/");
  EXPECT_TRUE(parse_target("/x?").query.empty());
  EXPECT_EQ(parse_target("/x?token=%4").query.count("token"), 0u);
}

TEST(Access, TheTokenComesFromTheQueryOrTheAuthorizationHeader) {
  EXPECT_EQ(request_token(parse_target("/?token=abc"), "token zzz"), "abc");
  EXPECT_EQ(request_token(parse_target("/"), "token zzz"), "zzz");
  EXPECT_EQ(request_token(parse_target("/"), "Bearer yyy"), "yyy");
  EXPECT_EQ(request_token(parse_target("/"), "Basic xxx"), "");
}

TEST(Access, OriginMustNameTheHostAsked) {
  EXPECT_TRUE(origin_allowed("", "127.0.0.1:8080"));  // not a browser: the token guards it
  EXPECT_TRUE(origin_allowed("http://127.0.0.1:8080", "127.0.0.1:8080"));
  EXPECT_TRUE(origin_allowed("http://LOCALHOST:8080", "localhost:8080"));
  EXPECT_FALSE(origin_allowed("http://evil.example", "127.0.0.1:8080"));
  EXPECT_FALSE(origin_allowed("http://127.0.0.1:8081", "127.0.0.1:8080"));
  EXPECT_FALSE(origin_allowed("null", "127.0.0.1:8080"));
  EXPECT_FALSE(origin_allowed("http://127.0.0.1:8080", ""));
}

TEST(Access, LoopbackAddresses) {
  for (const char* a : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) EXPECT_TRUE(is_loopback(a)) << a;
  for (const char* a : {"0.0.0.0", "::", "10.0.0.1", "192.168.1.2", "1.127.0.0"}) EXPECT_FALSE(is_loopback(a)) << a;
}

TEST(Access, RateLimitAllowsABurstThenTheRate) {
  RateLimit limit(10, 2);  // 10 per second, a burst of 20
  int allowed = 0;
  for (int i = 0; i < 100; ++i) allowed += limit.allow(0.0);
  EXPECT_EQ(allowed, 20);
  allowed = 0;
  for (int i = 0; i < 100; ++i) allowed += limit.allow(1.0);  // one second later: 10 more
  EXPECT_EQ(allowed, 10);
}

// A scene source with cameras and no model: what the message checks read.
session::SceneSource cameras_only() {
  session::SceneSource s;
  s.cameras = turntable_path(4, 64, 48);
  s.width = 64, s.height = 48;
  s.selection.inputs = {0, 2};
  s.targets = {1, 3};
  return s;
}

std::string camera_message(const nlohmann::json& camera, const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json m{{"type", "camera"}, {"camera", camera}};
  m.update(extra);
  return m.dump();
}

TEST(Messages, ASceneViewIsMeasuredOnlyWhenTheCameraIsExactlyIt) {
  const session::SceneSource s = cameras_only();
  const RenderLimits limits;
  const CameraMessage m =
      parse_camera_message(camera_message(camera_to_json(s.cameras[1]), {{"view", 1}}), s.cameras, limits);
  EXPECT_EQ(m.view, 1);
  EXPECT_TRUE(session::same_camera(m.camera, s.cameras[1]));
  // The same view index with another camera: a hint not trusted.
  EXPECT_EQ(parse_camera_message(camera_message(camera_to_json(s.cameras[2]), {{"view", 1}}), s.cameras, limits).view,
            -1);
  EXPECT_EQ(parse_camera_message(camera_message(camera_to_json(s.cameras[1]), {{"view", 99}}), s.cameras, limits).view,
            -1);
  const CameraMessage moving = parse_camera_message(
      camera_message(camera_to_json(s.cameras[0]), {{"moving", true}, {"truth", true}}), s.cameras, limits);
  EXPECT_TRUE(tag_moving(camera_tag(moving)));
  EXPECT_TRUE(tag_truth(camera_tag(moving)));
  EXPECT_FALSE(tag_error(camera_tag(moving)));
}

// Each bad message is one Error naming what is wrong.
void expect_refused(const std::string& text, const std::string& says, const RenderLimits& limits = {}) {
  const session::SceneSource s = cameras_only();
  try {
    parse_camera_message(text, s.cameras, limits);
    ADD_FAILURE() << "accepted: " << text.substr(0, 200);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(Messages, BadMessagesAreRefusedWithTheReason) {
  const nlohmann::json good = camera_to_json(turntable_path(1, 64, 48)[0]);
  expect_refused("{", "not JSON");
  expect_refused("[1,2]", "\"type\"");
  expect_refused(R"({"type":"open","path":"/etc/passwd"})", "unknown type");
  expect_refused(R"({"type":"camera"})", "no \"camera\"");
  expect_refused(camera_message(good, {{"moving", "yes"}}), "moving");
  expect_refused(camera_message(good, {{"view", 1.5}}), "view");
  expect_refused(std::string(70000, ' '), "longer than");
  nlohmann::json c = good;
  c["fx"] = "NaN";
  expect_refused(camera_message(c), "fx");
  c = good;
  c.erase("cy");
  expect_refused(camera_message(c), "cy");
  c = good;
  c["c2w"][0][0] = 2.0;  // not a rotation
  expect_refused(camera_message(c), "c2w");
  // A number beyond double's range: the JSON parser itself refuses it (never an infinity in a camera).
  std::string text = camera_message(good);
  const size_t fx = text.find("\"fx\":");
  text.replace(fx, text.find(',', fx) - fx, "\"fx\":1e999");
  expect_refused(text, "not JSON");
  c = good;
  c["w"] = 65536, c["h"] = 65536;
  expect_refused(camera_message(c), "w");
  c = good;
  c["w"] = 2048, c["h"] = 2048;
  expect_refused(camera_message(c), "at most 1024");
  c = good;
  c["w"] = 60;  // not a multiple of the patch
  expect_refused(camera_message(c), "multiple of 8");
}

// A request header as Beast hands it over.
RequestHead head(const std::string& method, const std::string& target, const std::string& host = "127.0.0.1:8080") {
  RequestHead h;
  h.method = method, h.target = target, h.host = host;
  return h;
}

const ServerRules kWithToken{"good-token-123", 65536};

TEST(RequestRules, NoTokenNoBudgetAndNoBodyRead) {
  // Without the token: refused and not authorized (it spends no shared budget), the connection closed.
  const Decision none = screen_request(head("GET", "/api/scene"), kWithToken);
  EXPECT_EQ(none.status, 401);
  EXPECT_FALSE(none.authorized);
  EXPECT_FALSE(none.keep_alive);
  const Decision good = screen_request(head("GET", "/api/scene?token=good-token-123"), kWithToken);
  EXPECT_EQ(good.action, Action::scene);
  EXPECT_TRUE(good.authorized && good.keep_alive);
  // A chunked body (its trailer could hold a 70,000-byte field) is refused on its header, before a byte of it.
  RequestHead chunked = head("POST", "/api/render?token=good-token-123");
  chunked.transfer_encoding = true;
  EXPECT_EQ(screen_request(chunked, kWithToken).status, 411);
  EXPECT_FALSE(screen_request(chunked, kWithToken).keep_alive);
  RequestHead large = head("POST", "/api/render?token=good-token-123");
  large.content_length = 65537;
  EXPECT_EQ(screen_request(large, kWithToken).status, 413);
  RequestHead get_with_body = head("GET", "/?token=good-token-123");
  get_with_body.content_length = 10;
  EXPECT_EQ(screen_request(get_with_body, kWithToken).status, 400);
  // Even without the token, a chunked request is answered from its header (401) and never read on.
  chunked.target = "/api/render";
  EXPECT_EQ(screen_request(chunked, kWithToken).status, 401);
}

TEST(RequestRules, VideoRoutes) {
  const std::string t = "token=good-token-123";
  RequestHead start = head("POST", "/api/video?client=3&" + t);
  start.content_length = 100000;  // over the 64 KiB of a render: a camera path may take up to 1 MiB
  const Decision d = screen_request(start, kWithToken);
  EXPECT_EQ(d.action, Action::video_start);
  EXPECT_EQ(d.client, 3);
  EXPECT_TRUE(takes_body(d.action));
  start.content_length = (1 << 20) + 1;
  EXPECT_EQ(screen_request(start, kWithToken).status, 413);
  EXPECT_EQ(screen_request(head("POST", "/api/video?" + t), kWithToken).status, 400);  // no client
  EXPECT_EQ(screen_request(head("POST", "/api/video?client=x&" + t), kWithToken).status, 400);
  EXPECT_EQ(screen_request(head("GET", "/api/video?client=1&" + t), kWithToken).status, 405);
  const Decision status = screen_request(head("GET", "/api/video/12?client=4&" + t), kWithToken);
  EXPECT_EQ(status.action, Action::video_status);
  EXPECT_EQ((std::pair{status.video, status.client}), (std::pair{12, 4}));
  EXPECT_EQ(screen_request(head("GET", "/api/video/12?" + t), kWithToken).status, 400);  // whose?
  EXPECT_EQ(screen_request(head("GET", "/api/video/12.mp4?client=4&" + t), kWithToken).action, Action::video_download);
  EXPECT_EQ(screen_request(head("DELETE", "/api/video/12?client=4&" + t), kWithToken).action, Action::video_cancel);
  EXPECT_EQ(screen_request(head("DELETE", "/api/video/12.mp4?client=4&" + t), kWithToken).status, 405);
  for (const char* bad :
       {"/api/video/../../etc", "/api/video/%2e%2e", "/api/video/1x.mp4", "/api/video/", "/api/video/.mp4"})
    EXPECT_EQ(screen_request(head("GET", std::string(bad) + "?client=4&" + t), kWithToken).status, 404) << bad;
  RequestHead get_with_body = head("GET", "/api/video/1?" + t);
  get_with_body.content_length = 10;
  EXPECT_EQ(screen_request(get_with_body, kWithToken).status, 400);
  EXPECT_EQ(screen_request(head("GET", "/api/video/1"), kWithToken).status, 401);
}

TEST(RequestRules, AVideoIdOfManyDigitsIsNoVideoNotNoNumber) {
  const std::string t = "?client=0&token=good-token-123";
  // Before: 6 digits read "no such video (its id is a number)".
  const Decision long_id = screen_request(head("GET", "/api/video/123456" + t), kWithToken);
  EXPECT_EQ(long_id.status, 404);
  EXPECT_EQ(long_id.message, "no video 123456");
  EXPECT_EQ(screen_request(head("GET", "/api/video/12x" + t), kWithToken).message,
            "no such video: the ID in /api/video/ID is a number");
}

TEST(RequestRules, ARefusedUpgradeClosesAndAPlainGetOfTheStreamIs426) {
  RequestHead upgrade = head("GET", "/stream?token=good-token-123");
  upgrade.upgrade = true, upgrade.origin = "http://evil.example";
  const Decision foreign = screen_request(upgrade, kWithToken);
  EXPECT_EQ(foreign.status, 403);
  EXPECT_FALSE(foreign.keep_alive);  // before: kept open, though the handshake never completes
  upgrade.target = "/other?token=good-token-123", upgrade.origin = "";
  EXPECT_EQ(screen_request(upgrade, kWithToken).status, 404);
  EXPECT_FALSE(screen_request(upgrade, kWithToken).keep_alive);
  upgrade.target = "/stream?token=good-token-123";
  EXPECT_EQ(screen_request(upgrade, kWithToken).action, Action::stream);
  // Before: 404 "not found", as if there were no stream.
  const Decision plain = screen_request(head("GET", "/stream?token=good-token-123"), kWithToken);
  EXPECT_EQ(plain.status, 426);
  EXPECT_NE(plain.message.find("WebSocket"), std::string::npos) << plain.message;
}

TEST(ShownPaths, FoldersAreDroppedAndOtherAbsolutePathsCutToTheirName) {
  const ShownPaths shown({"/data/scenes/chair", "relative/out"});
  // Names under a served folder stay relative to it.
  EXPECT_EQ(shown("/data/scenes/chair/images/020.png: cannot open file (no such file)"),
            "images/020.png: cannot open file (no such file)");
  EXPECT_EQ(shown("relative/out/video_3.mp4: ffmpeg failed"), "video_3.mp4: ffmpeg failed");
  // Any other absolute path: its file name; the API's routes and plain words are kept.
  EXPECT_EQ(shown("cannot read '/home/me/secret/model.safetensors' (bad header)"),
            "cannot read 'model.safetensors' (bad header)");
  EXPECT_EQ(shown("cancel it with DELETE /api/video/3)"), "cancel it with DELETE /api/video/3)");
  EXPECT_EQ(shown("a / b and 3/4 of mydata/scenes/chair/x"), "a / b and 3/4 of mydata/scenes/chair/x");
  EXPECT_EQ(ShownPaths()("(/tmp/x/y.png)"), "(y.png)");
}

TEST(RequestRules, RoutesAndRenderQuery) {
  const Decision jpeg =
      screen_request(head("POST", "/api/render?format=jpeg&quality=70&token=good-token-123"), kWithToken);
  EXPECT_EQ(jpeg.action, Action::render);
  EXPECT_TRUE(jpeg.jpeg);
  EXPECT_EQ(jpeg.quality, 70);
  EXPECT_EQ(screen_request(head("POST", "/api/render?quality=0&token=good-token-123"), kWithToken).status, 400);
  EXPECT_TRUE(screen_request(head("POST", "/api/render?side=b&token=good-token-123"), kWithToken).side_b);
  EXPECT_FALSE(screen_request(head("POST", "/api/render?side=a&token=good-token-123"), kWithToken).side_b);
  EXPECT_EQ(screen_request(head("POST", "/api/render?side=c&token=good-token-123"), kWithToken).status, 400);
  const Decision scene = screen_request(head("GET", "/api/scene?scene=2&token=good-token-123"), kWithToken);
  EXPECT_EQ((std::pair<Action, int>(scene.action, scene.scene)), (std::pair<Action, int>(Action::scene, 2)));
  EXPECT_EQ(screen_request(head("GET", "/api/scene?scene=-1&token=good-token-123"), kWithToken).status, 400);
  EXPECT_EQ(screen_request(head("GET", "/api/scenes?token=good-token-123"), kWithToken).action, Action::scenes);
  EXPECT_EQ(screen_request(head("GET", "/api/render?token=good-token-123"), kWithToken).status, 405);
  EXPECT_EQ(screen_request(head("GET", "/../etc/passwd?token=good-token-123"), kWithToken).status, 404);
  EXPECT_EQ(screen_request(head("GET", "/?token=good-token-123"), kWithToken).action, Action::page);
}

TEST(RequestRules, WithoutATokenOnlyALoopbackHostIsAnswered) {
  const ServerRules no_token{"", 65536};
  for (const char* host : {"127.0.0.1:8080", "127.0.0.1", "localhost:80", "LOCALHOST", "[::1]:8080", "127.1.2.3"})
    EXPECT_EQ(screen_request(head("GET", "/api/scene", host), no_token).action, Action::scene) << host;
  // DNS rebinding: a page at evil.example (resolving to 127.0.0.1) sends Host evil.example.
  for (const char* host :
       {"evil.example:8080", "", "127.0.0.1.evil.example", "127.0.0.256", "localhost:", "[::2]:80", "0x7f.0.0.1"}) {
    const Decision d = screen_request(head("GET", "/api/scene", host), no_token);
    EXPECT_EQ(d.status, 403) << host;
    EXPECT_FALSE(d.authorized) << host;
  }
  // With a token the Host is not what guards it.
  EXPECT_EQ(screen_request(head("GET", "/?token=good-token-123", "evil.example"), kWithToken).action, Action::page);
}

TEST(RequestRules, TwoHostLinesOrAHostThatIsNoHostAre400) {
  // RFC 9112 section 3.2: a server MUST answer 400 to more than one Host line or an invalid Host value. Before,
  // the first of two was taken, and a Host such as "localhost:80x" was only refused without a token (403).
  for (const ServerRules& rules : {kWithToken, ServerRules{"", 65536}}) {
    RequestHead two = head("GET", "/api/scene?token=good-token-123", "127.0.0.1:8080");
    two.host_lines = 2;
    Decision d = screen_request(two, rules);
    EXPECT_EQ(d.status, 400);
    EXPECT_NE(d.message.find("2 Host header lines"), std::string::npos) << d.message;
    EXPECT_FALSE(d.keep_alive);
    const std::vector<std::string> bad = {"localhost:80x",  "[::1",   "127.0.0.1:8080:1", "a b",
                                          "[]:80",          "[::1]x", "ex%4.com",         "caf\xc3\xa9",
                                          "evil.example/x", "a@b",    "127.0.0.1\x1b[2J", std::string("a\0b", 3)};
    for (const std::string& host : bad) {
      d = screen_request(head("GET", "/api/scene?token=good-token-123", host), rules);
      EXPECT_EQ(d.status, 400) << host;
      EXPECT_NE(d.message.find("is not a host name with an optional :port"), std::string::npos) << d.message;
      EXPECT_FALSE(d.authorized || d.keep_alive) << host;
    }
  }
  for (const char* host :
       {"", "localhost", "127.0.0.1:", "[::1]:8080", "[v1.x]", "ex%41mple.com:80", "a-b_c~d!$&'()*+,;="})
    EXPECT_TRUE(valid_host(host)) << host;
  // One Host line, valid: with a token any name is served.
  EXPECT_EQ(screen_request(head("GET", "/api/scene?token=good-token-123", "evil.example:8080"), kWithToken).action,
            Action::scene);
}

TEST(RequestRules, AnHttp11RequestWithoutAHostLineIs400) {
  // RFC 9112 section 3.2: a server MUST answer 400 to an HTTP/1.1 request without a Host line. Before, it was taken
  // as an empty Host: served with a token, 403 without one. HTTP/1.0 has no Host rule: it stays as before.
  for (const ServerRules& rules : {kWithToken, ServerRules{"", 65536}}) {
    RequestHead none = head("GET", "/api/scene?token=good-token-123", "");
    none.host_lines = 0;
    const Decision d = screen_request(none, rules);
    EXPECT_EQ(d.status, 400);
    EXPECT_EQ(d.message, "Host: an HTTP/1.1 request must have a Host header line (RFC 9112 section 3.2)");
    EXPECT_FALSE(d.authorized || d.keep_alive);
    none.http11 = false;
    EXPECT_EQ(screen_request(none, rules).status, rules.token.empty() ? 403 : 0);
  }
  RequestHead old = head("GET", "/api/scene?token=good-token-123", "");
  old.host_lines = 0, old.http11 = false;
  EXPECT_EQ(screen_request(old, kWithToken).action, Action::scene);
  // An empty Host line is a Host line (RFC 9112 allows it): served with a token, as before.
  EXPECT_EQ(screen_request(head("GET", "/api/scene?token=good-token-123", ""), kWithToken).action, Action::scene);
}

TEST(RequestRules, HeadersThatAreNotUtf8AreQuotedEscaped) {
  // The Origin check's 403 quotes both headers: a \xff in one made nlohmann's dump() throw out of the handler.
  RequestHead upgrade = head("GET", "/stream?token=good-token-123", "127.0.0.1:8080");
  upgrade.upgrade = true;
  upgrade.origin = "http://\xff";
  const Decision d = screen_request(upgrade, kWithToken);
  EXPECT_EQ(d.status, 403);
  const std::string text = error_json(d.message);
  const nlohmann::json back = nlohmann::json::parse(text);
  EXPECT_NE(back.at("error").get<std::string>().find("http://\\xff"), std::string::npos) << text;
  // A Host that is no host name is quoted in its 400 as escaped.
  const Decision bad_host =
      screen_request(head("GET", "/?token=good-token-123", "127.0.0.1:8080\x1b[2J\xff"), kWithToken);
  EXPECT_EQ(bad_host.status, 400);
  const std::string host_text = error_json(bad_host.message);
  EXPECT_EQ(host_text.find('\x1b'), std::string::npos) << host_text;
  EXPECT_NE(nlohmann::json::parse(host_text).at("error").get<std::string>().find("\\xff"), std::string::npos);
  EXPECT_EQ(quoted_header(std::string(500, 'a')).size(), 200u);
  // Any string, whatever its bytes, goes out as JSON.
  EXPECT_NO_THROW(nlohmann::json::parse(json_text(nlohmann::json{{"scene", "caf\xc3"}, {"x", {"\xff\xfe"}}})));
}

TEST(KeepServing, AConnectionsExceptionIsReportedAndTheLoopGoesOn) {
  int runs = 0;
  std::vector<std::string> reports;
  keep_serving(
      [&runs] {
        if (++runs < 3) throw std::length_error("field value too large");
      },
      [&reports](const std::string& what) { reports.push_back(what); });
  EXPECT_EQ(runs, 3);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0], "field value too large");
}

session::Rgb8 gradient(int width, int height) {
  session::Rgb8 image;
  image.width = width, image.height = height;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c) image.pixels.push_back(static_cast<uint8_t>((x * 4 + y * 2 + c * 60) % 256));
  return image;
}

TEST(FrameEncoding, PngIsLosslessAndJpegClose) {
  const session::Rgb8 image = gradient(40, 24);
  const std::string png = encode_png(image);
  const Rgba8Image back = decode_image("png", reinterpret_cast<const uint8_t*>(png.data()), png.size());
  ASSERT_EQ(back.width, 40);
  ASSERT_EQ(back.height, 24);
  for (size_t i = 0; i < image.pixels.size(); ++i) ASSERT_EQ(back.pixels[i / 3 * 4 + i % 3], image.pixels[i]) << i;
  const std::string jpeg = encode_jpeg(image, 95);
  EXPECT_EQ(static_cast<unsigned char>(jpeg[0]), 0xFF);
  const Rgba8Image lossy = decode_image("jpeg", reinterpret_cast<const uint8_t*>(jpeg.data()), jpeg.size());
  ASSERT_EQ(lossy.width, 40);
  double error = 0;
  for (size_t i = 0; i < image.pixels.size(); ++i) error += std::abs(lossy.pixels[i / 3 * 4 + i % 3] - image.pixels[i]);
  EXPECT_LT(error / image.pixels.size(), 6.0);  // mean absolute error in 8-bit steps
  EXPECT_THROW(encode_jpeg(session::Rgb8{}, 90), Error);
}

}  // namespace
}  // namespace lact::serve
