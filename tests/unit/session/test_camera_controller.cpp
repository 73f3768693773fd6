// The session's parts the viewers share (session/): camera controller math, frame statistics, the camera path recorder.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/camera_geometry.h"
#include "datasets/camera_path_io.h"
#include "session/camera_controller.h"
#include "session/frame_stats.h"
#include "session/path_recorder.h"
#include "system/error.h"

namespace lact::session {
namespace {

constexpr double kPi = 3.14159265358979323846;

Vec3 centre(const Camera& c) { return {c.c2w[3], c.c2w[7], c.c2w[11]}; }
Vec3 axis(const Camera& c, int k) { return {c.c2w[k], c.c2w[4 + k], c.c2w[8 + k]}; }
double dot(const Vec3& a, const Vec3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
Vec3 sub(const Vec3& a, const Vec3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
double norm(const Vec3& a) { return std::sqrt(dot(a, a)); }

// The official turntable: z up, looking at the origin from 1.7..3.0.
std::vector<Camera> turntable() { return turntable_path(16, 64, 48); }

void expect_orthonormal(const Camera& c) {
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(dot(axis(c, i), axis(c, j)), i == j ? 1.0 : 0.0, 1e-9);
  // Right-handed: x cross y = z.
  const Vec3 x = axis(c, 0), y = axis(c, 1), z = axis(c, 2);
  EXPECT_NEAR(x[1] * y[2] - x[2] * y[1], z[0], 1e-9);
}

TEST(SceneFrame, TurntableIsZUpAroundTheOrigin) {
  const SceneFrame f = scene_frame(turntable());
  EXPECT_NEAR(f.up[2], 1.0, 1e-6);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(f.pivot[k], 0.0, 1e-6);
  EXPECT_GT(f.scale, 1.5);
  EXPECT_LT(f.scale, 3.1);
}

TEST(SceneFrame, YUpScene) {
  // Cameras on a circle in the x-z plane, "up" along +y: OpenCV y (down) is -y.
  std::vector<Camera> cameras;
  for (int i = 0; i < 8; ++i) {
    const double a = 2 * kPi * i / 8;
    Camera c = pinhole(32, 32, 50);
    c.c2w = look_at({2 * std::cos(a), 0.5, 2 * std::sin(a)}, {0, 0, 0}, {0, 1, 0});
    cameras.push_back(c);
  }
  const SceneFrame f = scene_frame(cameras);
  EXPECT_GT(f.up[1], 0.99);
}

TEST(SceneFrame, TiltedSceneKeepsItsMeanUp) {
  // Up 45 degrees between y and z: no world axis is close, the mean of the cameras' up axes is used.
  const double c = std::sqrt(0.5);
  const Vec3 up{0, c, c};
  std::vector<Camera> cameras;
  for (int i = 0; i < 8; ++i) {
    const double a = 2 * kPi * i / 8;
    Camera cam = pinhole(32, 32, 50);
    // A circle in the plane normal to `up`: spanned by x and (0, c, -c).
    cam.c2w = look_at({2 * std::cos(a), 2 * std::sin(a) * c, -2 * std::sin(a) * c}, {0, 0, 0}, up);
    cameras.push_back(cam);
  }
  const SceneFrame f = scene_frame(cameras);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(f.up[k], up[k], 1e-9);
}

TEST(CameraController, SnapIsExact) {
  const std::vector<Camera> cams = turntable();
  CameraController c(scene_frame(cams), cams[0], 0);
  Camera odd = cams[3];
  odd.cx = 30.25f;
  odd.fy = 61.5f;
  c.snap(odd, 3);
  EXPECT_TRUE(same_camera(c.camera(), odd));
  EXPECT_EQ(c.snapped_view(), 3);
  // The target is on the optical axis, at the pivot's depth.
  const Vec3 to_target = sub(c.target(), centre(c.camera()));
  EXPECT_NEAR(dot(to_target, axis(c.camera(), 2)), norm(to_target), 1e-9);
  EXPECT_NEAR(c.distance(), norm(centre(odd)), 1e-6);  // turntable cameras look at the origin
  c.orbit(0.1, 0);
  EXPECT_EQ(c.snapped_view(), -1);
  c.reset();
  EXPECT_TRUE(same_camera(c.camera(), cams[0]));
  EXPECT_EQ(c.snapped_view(), 0);
}

TEST(CameraController, FullOrbitReturnsToStart) {
  const std::vector<Camera> cams = turntable();
  CameraController c(scene_frame(cams), cams[2], 2);
  const Camera start = c.camera();
  const double d0 = c.distance();
  for (int i = 0; i < 200; ++i) {
    c.orbit(2 * kPi / 200, 0);
    EXPECT_NEAR(norm(sub(centre(c.camera()), c.target())), d0, 1e-9);
    // Elevation above the ground plane is unchanged by yaw.
    EXPECT_NEAR(centre(c.camera())[2], centre(start)[2], 1e-9);
  }
  for (int k = 0; k < 16; ++k) EXPECT_NEAR(c.camera().c2w[k], start.c2w[k], 1e-9) << k;
  expect_orthonormal(c.camera());
}

TEST(CameraController, OrbitYawTurnsAboutUp) {
  const std::vector<Camera> cams = turntable();
  CameraController c(scene_frame(cams), cams[0], 0);
  const Vec3 p0 = centre(c.camera());
  c.orbit(kPi / 2, 0);
  const Vec3 p1 = centre(c.camera());
  // A quarter turn counterclockwise about +z: (x, y) -> (-y, x).
  EXPECT_NEAR(p1[0], -p0[1], 1e-9);
  EXPECT_NEAR(p1[1], p0[0], 1e-9);
  EXPECT_NEAR(p1[2], p0[2], 1e-9);
  // Still looking at the target.
  const Vec3 f = axis(c.camera(), 2), to = sub(c.target(), p1);
  EXPECT_NEAR(dot(f, to), norm(to), 1e-9);
}

TEST(CameraController, PitchRaisesAndClampsBelowThePole) {
  const std::vector<Camera> cams = turntable();
  CameraController c(scene_frame(cams), cams[0], 0);
  const double z0 = centre(c.camera())[2];
  c.orbit(0, 0.2);
  EXPECT_GT(centre(c.camera())[2], z0);
  for (int i = 0; i < 100; ++i) c.orbit(0, 0.1);
  const Vec3 offset = sub(centre(c.camera()), c.target());
  const double elevation = std::asin(offset[2] / norm(offset)) * 180 / kPi;
  EXPECT_NEAR(elevation, 89.0, 1e-6);
  expect_orthonormal(c.camera());
  // The image's up still points up (no flip over the pole).
  EXPECT_LT(axis(c.camera(), 1)[2], 0.0 + 1e-12);
  for (int i = 0; i < 100; ++i) c.orbit(0, -0.1);
  const Vec3 below = sub(centre(c.camera()), c.target());
  EXPECT_NEAR(std::asin(below[2] / norm(below)) * 180 / kPi, -89.0, 1e-6);
}

TEST(CameraController, PanKeepsTheTargetUnderTheSamePixelShift) {
  const std::vector<Camera> cams = turntable();
  CameraController c(scene_frame(cams), cams[5], 5);
  const Camera before = c.camera();
  const Vec3 target = c.target();
  c.pan(10, -4);
  // Project the old target into the new camera: it moved by (+10, -4) pixels from the principal point.
  const Camera& now = c.camera();
  const Vec3 rel = sub(target, centre(now));
  const double x = dot(rel, axis(now, 0)), y = dot(rel, axis(now, 1)), z = dot(rel, axis(now, 2));
  EXPECT_NEAR(now.fx * x / z, 10, 1e-6);
  EXPECT_NEAR(now.fy * y / z, -4, 1e-6);
  for (int k : {0, 1, 2, 4, 5, 6, 8, 9, 10}) EXPECT_DOUBLE_EQ(now.c2w[k], before.c2w[k]);
}

TEST(CameraController, DollyAndMove) {
  const std::vector<Camera> cams = turntable();
  CameraController c(scene_frame(cams), cams[1], 1);
  const double d0 = c.distance();
  c.dolly(2);
  EXPECT_NEAR(c.distance(), d0 * 0.85 * 0.85, 1e-12);
  EXPECT_NEAR(norm(sub(centre(c.camera()), c.target())), c.distance(), 1e-9);
  c.dolly(-2);
  EXPECT_NEAR(c.distance(), d0, 1e-12);
  const Vec3 p0 = centre(c.camera()), t0 = c.target();
  c.speed = 2;
  c.move({0, 1, 0}, 0.5);  // up along the scene's up: +z by 1
  EXPECT_NEAR(centre(c.camera())[2] - p0[2], 1.0, 1e-12);
  EXPECT_NEAR(c.target()[2] - t0[2], 1.0, 1e-12);
  const Vec3 f = axis(c.camera(), 2);
  c.move({0, 0, 1}, 0.25);  // forward by 0.5
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(centre(c.camera())[k], p0[k] + (k == 2 ? 1 : 0) + 0.5 * f[k], 1e-12);
}

TEST(CameraController, LookTurnsAboutTheCameraCentre) {
  const std::vector<Camera> cams = turntable();
  CameraController c(scene_frame(cams), cams[4], 4);
  const Vec3 p0 = centre(c.camera());
  c.look(0.3, -0.2);
  const Vec3 p1 = centre(c.camera());
  for (int k = 0; k < 3; ++k) EXPECT_DOUBLE_EQ(p1[k], p0[k]);
  const Vec3 to = sub(c.target(), p1);
  EXPECT_NEAR(dot(to, axis(c.camera(), 2)), c.distance(), 1e-9);
  expect_orthonormal(c.camera());
}

TEST(CameraController, FieldOfView) {
  const std::vector<Camera> cams = turntable();
  CameraController c(scene_frame(cams), cams[0], 0);
  EXPECT_NEAR(c.hfov(), 50.0, 1e-4);
  const float ratio = c.camera().fy / c.camera().fx;
  c.set_hfov(70);
  EXPECT_NEAR(c.hfov(), 70.0, 1e-4);
  EXPECT_NEAR(c.camera().fy / c.camera().fx, ratio, 1e-6);
  EXPECT_EQ(c.snapped_view(), -1);
}

TEST(ScaledCamera, MultiplesOfThePatch) {
  Camera c = pinhole(48, 32, 60);
  c.cx = 26.2f;
  EXPECT_TRUE(same_camera(scaled_camera(c, 1.0, 8), c));
  const Camera half = scaled_camera(c, 0.5, 8);
  EXPECT_EQ(half.width, 24);
  EXPECT_EQ(half.height, 16);
  EXPECT_FLOAT_EQ(half.fx, c.fx * 0.5f);
  EXPECT_FLOAT_EQ(half.cx, 13.1f);
  const Camera tiny = scaled_camera(c, 0.05, 8);
  EXPECT_EQ(tiny.width, 8);
  EXPECT_EQ(tiny.height, 8);
  EXPECT_FLOAT_EQ(tiny.fy, c.fy * 8 / 32);
  const Camera odd = scaled_camera(pinhole(64, 64, 50), 0.7, 8);  // 44.8 -> 48
  EXPECT_EQ(odd.width, 48);
}

TEST(FrameStats, MovingAveragesAndRates) {
  MovingAverage avg(1.0);
  EXPECT_EQ(avg.mean(0), 0);
  avg.add(0.0, 10);
  avg.add(0.5, 20);
  EXPECT_DOUBLE_EQ(avg.mean(0.6), 15);
  EXPECT_DOUBLE_EQ(avg.mean(1.2), 20);  // the first expired
  EXPECT_DOUBLE_EQ(avg.mean(5), 0);

  RateMeter rate(1.0);
  for (int i = 0; i < 100; ++i) rate.tick(i * 0.02);  // 50 per second for 2 s
  EXPECT_NEAR(rate.per_second(1.99), 50, 1.01);
  EXPECT_DOUBLE_EQ(rate.per_second(10), 0);

  FrameStats stats;
  stats.begin_interval(1.0);
  for (int i = 0; i < 10; ++i) stats.frame(1.0 + 0.1 * (i + 1), 0.01);
  stats.view(1.5, 0.2, 48, 32);
  stats.view(1.9, 0.2, 24, 16);
  const IntervalTotals& t = stats.end_interval(2.0);
  EXPECT_EQ(t.frames, 10);
  EXPECT_EQ(t.views, 2);
  EXPECT_DOUBLE_EQ(t.frames_per_second(), 10);
  EXPECT_DOUBLE_EQ(t.views_per_second(), 2);
  EXPECT_NEAR(t.mean_frame_ms(), 10, 1e-9);
  EXPECT_NEAR(t.mean_render_ms(), 200, 1e-9);
  EXPECT_NEAR(t.render_busy(), 0.4, 1e-9);
  EXPECT_EQ(t.smallest_width, 24);
  EXPECT_EQ(t.smallest_height, 16);
  stats.view(2.5, 0.1);  // after the interval: not counted
  EXPECT_EQ(stats.interval().views, 2);
}

TEST(PathRecorder, InterpolatesSavesLoadsAndPlays) {
  const std::vector<Camera> cams = turntable();
  PathRecorder r;
  EXPECT_TRUE(r.path().empty());
  r.add_key(cams[0]);
  r.add_key(cams[4]);
  r.add_key(cams[8]);
  r.frames_per_segment = 5;
  const std::vector<Camera> path = r.path();
  ASSERT_EQ(path.size(), 11u);  // 5 + 5 + the last key
  EXPECT_EQ(r.frame_count(), 11u);
  EXPECT_NEAR(path[5].c2w[3], cams[4].c2w[3], 1e-9);
  EXPECT_NEAR(path[10].c2w[11], cams[8].c2w[11], 1e-9);

  const std::string file = (std::filesystem::temp_directory_path() / "lact_test_recorder_path.json").string();
  r.save(file, PathFrame());
  EXPECT_EQ(read_camera_path(file).size(), 11u);
  PathRecorder loaded;
  loaded.load(file, PathFrame(), "", 8);
  EXPECT_EQ(loaded.keys().size(), 11u);
  EXPECT_EQ(loaded.path().size(), 11u);  // a loaded path plays as it is
  EXPECT_EQ(loaded.frame_count(), 11u);
  loaded.frames_per_segment = 3;  // 10 segments of 3, then the last key
  EXPECT_EQ(loaded.path().size(), 31u);
  EXPECT_EQ(loaded.frame_count(), 31u);
  loaded.frames_per_segment = 1;
  for (int k = 0; k < 16; ++k) EXPECT_NEAR(loaded.path()[7].c2w[k], path[7].c2w[k], 1e-9);
  std::filesystem::remove(file);
  EXPECT_THROW(loaded.load(file, PathFrame(), "", 8), Error);
  EXPECT_EQ(loaded.keys().size(), 11u);  // unchanged by the failed load

  r.play(10.0, 10, false);
  ASSERT_TRUE(r.playing());
  EXPECT_NEAR(r.frame_at(10.0)->c2w[3], path[0].c2w[3], 1e-12);
  EXPECT_NEAR(r.frame_at(10.55)->c2w[3], path[5].c2w[3], 1e-12);
  const auto last = r.frame_at(20.0);  // past the end: the last frame, then stopped
  ASSERT_TRUE(last.has_value());
  EXPECT_NEAR(last->c2w[11], path[10].c2w[11], 1e-12);
  EXPECT_FALSE(r.playing());
  EXPECT_FALSE(r.frame_at(20.1).has_value());
  r.play(0.0, 10, true);
  EXPECT_NEAR(r.frame_at(1.25)->c2w[3], path[1].c2w[3], 1e-12);  // frame 12 wraps to 1
  EXPECT_TRUE(r.playing());
}

// A loaded path whose frame size the model's patch does not divide is refused on load, naming the file and the
// frame, as `lact render --path` refuses it (before, it loaded, and every render of its cameras then failed with a
// line that named neither). The reference: sizes written by hand (60 is divisible by 4, not by 8).
TEST(PathRecorder, LoadRefusesAFrameSizeThePatchDoesNotDivide) {
  std::vector<Camera> frames = turntable();
  frames.resize(3);
  frames[1].width = 60;
  frames[1].cx = 30;
  const std::string file = (std::filesystem::temp_directory_path() / "lact_test_recorder_patch.json").string();
  write_camera_path(file, frames);
  PathRecorder r;
  r.add_key(frames[0]);
  try {
    r.load(file, PathFrame(), "", 8);
    ADD_FAILURE() << "a 60-pixel-wide frame loaded for a patch of 8";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(file + " frame 1", 0), 0u) << message;
    EXPECT_NE(message.find("patch size 8"), std::string::npos) << message;
  }
  EXPECT_EQ(r.keys().size(), 1u);  // unchanged by the refused load
  r.load(file, PathFrame(), "", 4);
  EXPECT_EQ(r.keys().size(), 3u);
  EXPECT_EQ(r.keys()[1].width, 60);
  std::filesystem::remove(file);
}

// A path of more frames than kMaxPathFrames (a long loaded path with a raised frames/segment) is refused by play,
// save and path() with one Error naming the frame count and the cap, the keys and the playback unchanged (before,
// it was interpolated whole and could run the viewer out of memory). The reference: counts worked out by hand,
// (keys - 1) x frames/segment + 1; 100000 = 2439 x 41 + 1 is exactly the cap, 2440 x 41 + 1 = 100041 is over it.
TEST(PathRecorder, RefusesAPathOfMoreFramesThanTheCap) {
  ASSERT_EQ(kMaxPathFrames, 100000u);  // the README states this cap
  const std::vector<Camera> ring = turntable();
  PathRecorder r;
  for (int k = 0; k < 2440; ++k) r.add_key(ring[k % ring.size()]);
  r.frames_per_segment = 41;
  EXPECT_EQ(r.frame_count(), 100000u);
  EXPECT_EQ(r.path().size(), 100000u);  // the cap itself is allowed (about 15 MB of cameras)
  r.play(0.0, 30, false);
  EXPECT_EQ(r.playing_frames(), 100000);
  r.stop();

  r.add_key(ring[0]);
  EXPECT_EQ(r.frame_count(), 100041u);
  const std::string file = (std::filesystem::temp_directory_path() / "lact_test_recorder_cap.json").string();
  std::filesystem::remove(file);
  for (int action = 0; action < 3; ++action) {
    try {
      if (action == 0) r.path();
      if (action == 1) r.play(0.0, 30, false);
      if (action == 2) r.save(file, PathFrame());
      ADD_FAILURE() << "action " << action << " built a path of 100041 frames";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("100041 frames (2441 keys, 41 frames/segment)"), std::string::npos) << message;
      EXPECT_NE(message.find("the 100000 a path may have"), std::string::npos) << message;
    }
  }
  EXPECT_FALSE(r.playing());
  EXPECT_EQ(r.playing_frames(), 100000);  // the last playback, not replaced
  EXPECT_FALSE(std::filesystem::exists(file));
  EXPECT_EQ(r.keys().size(), 2441u);
  EXPECT_EQ(r.frames_per_segment, 41);
  r.frames_per_segment = 1;  // the keys alone are under the cap
  EXPECT_EQ(r.path().size(), 2441u);
}

// A path saved in a session with --normalize-poses is in the normalised world: the file records that world (as
// `lact path --state` does), so `lact render --path` in raw coordinates refuses it rather than rendering frames
// that look at nothing, and a load into a session of another world is refused with the keys left as they were.
// The reference: the transform written by hand, read back through datasets' own reader.
TEST(PathRecorder, SavedPathsRecordTheSessionsWorldAndLoadsMustMatchIt) {
  const std::vector<Camera> cams = turntable();
  PathFrame normalised;
  normalised.recorded = true;
  normalised.normalize_poses = "inputs";
  normalised.pose.world = {0, -1, 0, 0.5, 1, 0, 0, -0.25, 0, 0, 1, 2, 0, 0, 0, 1};  // 90 deg about z, moved
  normalised.pose.scale = 2.5;
  PathFrame raw;
  raw.recorded = true;
  PathRecorder r;
  r.add_key(cams[0]);
  r.add_key(cams[4]);
  r.frames_per_segment = 3;
  const std::string file = (std::filesystem::temp_directory_path() / "lact_test_recorder_world.json").string();
  r.save(file, normalised);
  const PathFrame written = read_camera_path_frame(file);
  EXPECT_TRUE(written.recorded);
  EXPECT_EQ(written.normalize_poses, "inputs");
  for (int k = 0; k < 16; ++k) EXPECT_DOUBLE_EQ(written.pose.world[k], normalised.pose.world[k]) << k;
  EXPECT_DOUBLE_EQ(written.pose.scale, 2.5);

  PathRecorder same;
  same.load(file, normalised, "", 8);
  EXPECT_EQ(same.keys().size(), 4u);  // 3 + the last key
  PathRecorder other;
  other.add_key(cams[1]);
  try {
    other.load(file, raw, "", 8);
    ADD_FAILURE() << "a normalised path loaded into raw coordinates";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(file, 0), 0u) << message;  // names the file
    EXPECT_NE(message.find("--normalize-poses inputs"), std::string::npos) << message;
  }
  EXPECT_EQ(other.keys().size(), 1u);

  r.save(file, raw);  // a raw session's path says so, and a normalised session refuses it
  EXPECT_EQ(read_camera_path_frame(file).normalize_poses, "none");
  EXPECT_TRUE(read_camera_path_frame(file).recorded);
  EXPECT_THROW(same.load(file, normalised, "", 8), Error);
  EXPECT_EQ(same.keys().size(), 4u);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace lact::session
