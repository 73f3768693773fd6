// The Run's per-camera render (pipeline/run.h), as the viewer and a Python module call it: the fixture scene
// encoded by a Run, one camera rendered at its own size and at another, against Model::render of a camera scaled
// by hand from a state encoded without the Run; a size the patch does not divide is refused naming it. The viewer's
// export (Run::export_path) writes the path and its frames, and replaces only lact's files in its folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "datasets/camera_path_io.h"
#include "datasets/image_io.h"
#include "datasets/png_tag.h"
#include "kernels/backend_factory.h"
#include "pipeline/path_frame.h"
#include "pipeline/run.h"
#include "session/typed_outputs.h"
#include "system/error.h"
#include "system/subprocess.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  std::string model = (fs::path(test::env_path("LACT_FIXTURE_DIR")) / "model.safetensors").string();
  DataOptions data;
  Fixture() {
    data.data = (fs::path(test::env_path("LACT_FIXTURE_DIR")) / "scene").string();
    data.inputs = "0,1,2";
  }
};

CommonOptions one_thread() {
  CommonOptions common;
  common.threads = 1;
  return common;
}

// The fixture scene encoded by a Run, and its view 3: the camera the tests render.
struct Encoded {
  const Fixture f;
  lact::Run run{one_thread()};  // qualified: a gtest body sees testing::Test::Run
  SceneSelection selection;
  SceneState state;
  Camera target;
  Encoded() {
    run.load_model(f.model);
    selection = run.select(f.data);
    state = run.encode(selection);
    target = selected_views(selection, {3}, false).at(0).camera;
  }
};

// The camera at half its size, its intrinsics scaled by hand (the reference for the Run's own scaling).
Camera halved(const Camera& c) {
  Camera half = c;
  half.width = c.width / 2, half.height = c.height / 2;
  half.fx = c.fx / 2, half.fy = c.fy / 2, half.cx = c.cx / 2, half.cy = c.cy / 2;
  return half;
}

float largest_difference(const Image& a, const Image& b) {
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.height, b.height);
  if (a.rgb.size() != b.rgb.size()) return 1e9f;
  float most = 0;
  for (size_t i = 0; i < a.rgb.size(); ++i) most = std::max(most, std::abs(a.rgb[i] - b.rgb[i]));
  return most;
}

TEST(PipelineRun, RenderOneCameraAtItsSizeAndAnother) {
  Encoded e;
  auto& [f, run, selection, state, target] = e;

  // The reference: the same views encoded by a model of its own, the camera scaled by hand.
  std::unique_ptr<Backend> backend = make_backend(one_thread());
  const Model model(load_model(f.model, *backend), *backend);
  const SceneState reference = model.encode(selected_views(selection, selection.inputs, true));
  const Camera half = halved(target);

  const Image full = run.render(state, target, target.height, target.width);
  EXPECT_EQ(full.height, target.height);
  EXPECT_LT(largest_difference(full, model.render(reference, {target}).at(0)), 1e-5f);
  const Image small = run.render(state, target, half.height, half.width);
  EXPECT_EQ(small.width, half.width);
  EXPECT_LT(largest_difference(small, model.render(reference, {half}).at(0)), 1e-5f);
  EXPECT_GT(largest_difference(full, Image{full.width, full.height, std::vector<float>(full.rgb.size(), 0.0f)}),
            0.01f);  // a real image, not an empty one
}

TEST(PipelineRun, RenderRefusesASizeThePatchDoesNotDivide) {
  Encoded e;
  auto& [f, run, selection, state, target] = e;
  try {
    run.render(state, target, 12, target.width);
    FAIL() << "12 rows rendered with patch size 8";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("size 12x" + std::to_string(target.width)), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("patch size 8"), std::string::npos) << e.what();
  }
}

// Views held in memory (the Python module's arrays) and a batch of cameras of two sizes, through the Run: the
// same numbers as the model called directly.
TEST(PipelineRun, EncodeViewsAndRenderCamerasAsTheModelDoes) {
  Encoded e;
  const std::vector<PosedImage> inputs = selected_views(e.selection, e.selection.inputs, true);
  const SceneState state = e.run.encode_views(inputs, "images");
  const Camera half = halved(e.target);
  const std::vector<Image> images = e.run.render_cameras(state, {e.target, e.target, half}, "size");
  ASSERT_EQ(images.size(), 3u);
  std::unique_ptr<Backend> backend = make_backend(one_thread());
  const Model model(load_model(e.f.model, *backend), *backend);
  const std::vector<Image> reference = model.render(model.encode(inputs), {e.target, e.target, half});
  for (size_t i = 0; i < images.size(); ++i) EXPECT_LT(largest_difference(images[i], reference[i]), 1e-5f) << i;
  EXPECT_THROW(e.run.encode_views({}, "images"), Error);
}

// An export into `folder`, as the viewer asks for one.
PathExport export_to(const fs::path& folder, bool video = false, bool force = false) {
  PathExport where;
  where.folder = folder.string(), where.video = video, where.force = force;
  return where;
}

// The viewer's path export through the Run (Run::export_path): path.json holds the frames, each frame's PNG is
// the model's render of its camera (to 8-bit rounding); a frame over the memory limit is refused by the Run's
// memory check, naming the path, before a frame is written.
TEST(PipelineRun, ExportPathWritesThePathAndItsFrames) {
  Encoded e;
  const fs::path folder = fs::temp_directory_path() / ("lact_export_" + std::to_string(::getpid()));
  fs::remove_all(folder);
  const Camera half = halved(e.target);
  const std::string file = e.run.export_path(e.state, {e.target, half}, export_to(folder));
  EXPECT_EQ(fs::path(file).filename(), "path.json");
  const std::vector<Camera> read = read_path_frames(file, 8);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1].width, half.width);
  EXPECT_NEAR(read[1].fx, half.fx, 1e-4 * half.fx);
  const std::vector<Image> reference = e.run.render_cameras(e.state, {e.target, half}, "size");
  for (int i = 0; i < 2; ++i) {
    const Rgba8Image png = read_image((folder / ("frame_000" + std::to_string(i) + ".png")).string());
    ASSERT_EQ(png.width, reference[i].width);
    ASSERT_EQ(png.height, reference[i].height);
    float most = 0;
    for (size_t p = 0; p < static_cast<size_t>(png.width) * png.height; ++p)
      for (int c = 0; c < 3; ++c)
        most = std::max(most, std::abs(png.pixels[p * 4 + c] / 255.0f - reference[i].rgb[p * 3 + c]));
    EXPECT_LE(most, 0.5f / 255 + 1e-6f) << i;
  }
  fs::remove_all(folder);

  CommonOptions tight = one_thread();
  tight.memory_limit_gb = 1e-6;  // 1 kB: no frame fits
  lact::Run limited(tight);
  limited.load_model(e.f.model);
  try {
    limited.export_path(e.state, {e.target}, export_to(folder));
    FAIL() << "a frame over the memory limit was exported";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("path.json: a frame of"), std::string::npos) << error.what();
  }
  EXPECT_FALSE(fs::exists(folder / "frame_0000.png"));
  fs::remove_all(folder);
}

// The viewer's export records the world its session's cameras are in (PathExport::world), as its "save" does:
// `lact render --path` in another world is refused in one line telling how the session was started, and in the
// same world the file is taken.
TEST(PipelineRun, ExportedPathRecordsTheSessionsWorld) {
  Encoded e;
  const fs::path folder = fs::temp_directory_path() / ("lact_export_world_" + std::to_string(::getpid()));
  fs::remove_all(folder);
  PathExport where = export_to(folder);
  PathFrame world;
  world.recorded = true, world.normalize_poses = "inputs", world.made_by = kViewerPathMaker;
  world.pose.world[3] = 0.5, world.pose.world[7] = -0.25, world.pose.scale = 2.5;  // a shift, then a scale
  where.world = world;
  const std::string file = e.run.export_path(e.state, {e.target}, where);
  const PathFrame read = read_camera_path_frame(file);
  EXPECT_TRUE(read.recorded);
  EXPECT_TRUE(read.same_world(world));
  EXPECT_EQ(read.made_by, "lact view");
  EXPECT_NO_THROW(check_path_frame(file, world, "", false));
  try {
    check_path_frame(file, PathFrame(), "", false);  // a raw run
    FAIL() << "a path of the normalised world was taken by a raw run";
  } catch (const Error& error) {
    const std::string line = error.what();
    EXPECT_NE(line.find("the lact view session that saved it"), std::string::npos) << line;
    EXPECT_NE(line.find("--normalize-poses inputs"), std::string::npos) << line;
  }
  fs::remove_all(folder);
}

// An export folder of its own, removed after the test.
struct ExportFolder {
  const fs::path path = fs::temp_directory_path() / ("lact_export_users_" + std::to_string(::getpid()));
  ExportFolder() { fs::remove_all(path), fs::create_directories(path); }
  ~ExportFolder() { fs::remove_all(path); }
};

// An export as the desktop viewer asks for it: `session`'s record of what it wrote decides for path.mp4, and a
// video written is recorded as the viewer records it when the export's outcome comes back.
std::string export_as_viewer(Encoded& e, const fs::path& folder, bool video, bool force,
                             session::TypedOutputs& session) {
  PathExport where = export_to(folder, video, force);
  where.session_wrote = [&session](const std::string& file) { return session.wrote_unchanged(file); };
  const std::string file = e.run.export_path(e.state, {e.target, e.target}, where);
  if (video) session.wrote((folder / "path.mp4").string());
  return file;
}

// The viewer's export into a folder the user typed follows `lact render --path`: a user's file at one of its names
// (frame_0000.png, path.json, path.mp4; the reference is the file system: its bytes before and after) is refused
// before any work, naming it, and left as it was; the viewer's --force replaces it. A camera path as lact writes
// it (`lact path`'s, made_by and frame included) is lact's: exported over without --force.
TEST(PipelineRun, ExportRefusesAUsersFileAtItsNamesUnlessForce) {
  Encoded e;
  const ExportFolder folder;
  const std::map<std::string, std::string> users = {
      {"frame_0000.png", "the user's photo"},
      {"path.json", R"({"format": "lact camera path v1", "frames": [], "notes": "mine"})"},
      {"path.mp4", "the user's video"}};
  for (const auto& [name, bytes] : users) {
    test::write_bytes(folder.path / name, bytes);
    session::TypedOutputs session(InputFiles(), false);
    const std::string error = test::error_of([&] { export_as_viewer(e, folder.path, true, false, session); });
    EXPECT_NE(error.find((folder.path / name).string() + ": exists and is not lact's output"), std::string::npos)
        << name << ": " << error;
    EXPECT_NE(error.find("start lact view with --force"), std::string::npos) << error;
    EXPECT_TRUE(test::read_bytes(folder.path / name) == bytes) << name << " changed";
    EXPECT_EQ(fs::exists(folder.path / "frame_0001.png"), false) << name << ": a frame written before the refusal";
    fs::remove(folder.path / name);
  }

  for (const char* name : {"frame_0000.png", "path.json"}) test::write_bytes(folder.path / name, users.at(name));
  session::TypedOutputs forced(InputFiles(), true);
  export_as_viewer(e, folder.path, false, true, forced);
  EXPECT_TRUE(is_lact_png((folder.path / "frame_0000.png").string()));
  EXPECT_EQ(read_camera_path((folder.path / "path.json").string()).size(), 2u);

  PathFrame recorded;
  recorded.recorded = true, recorded.made_by = "orbit";
  write_camera_path((folder.path / "path.json").string(), {e.target}, &recorded);  // as `lact path` writes it
  session::TypedOutputs other(InputFiles(), false);
  export_as_viewer(e, folder.path, false, false, other);
  EXPECT_EQ(read_camera_path((folder.path / "path.json").string()).size(), 2u);
}

// path.mp4 carries no mark: the session that exported it exports again over it without --force, another session
// (or the same one after the user rewrote it) is refused, and --force replaces it. Needs ffmpeg, as --video does.
TEST(PipelineRun, ExportAgainReplacesTheSessionsOwnVideoOnly) {
  if (find_program("ffmpeg").empty() || find_program("ffprobe").empty()) GTEST_SKIP() << "no ffmpeg on PATH";
  Encoded e;
  const ExportFolder folder;
  const fs::path mp4 = folder.path / "path.mp4";
  session::TypedOutputs session(InputFiles(), false);
  export_as_viewer(e, folder.path, true, false, session);
  const std::string first = test::read_bytes(mp4);
  ASSERT_FALSE(first.empty());
  export_as_viewer(e, folder.path, true, false, session);  // the second export of the same session
  EXPECT_TRUE(is_lact_png((folder.path / "frame_0001.png").string()));

  session::TypedOutputs other(InputFiles(), false);
  EXPECT_NE(test::error_of([&] { export_as_viewer(e, folder.path, true, false, other); }).find("path.mp4"),
            std::string::npos);
  test::write_bytes(mp4, "the user's video");  // rewritten in place: the user's now
  EXPECT_NE(test::error_of([&] { export_as_viewer(e, folder.path, true, false, session); }).find("path.mp4"),
            std::string::npos);
  EXPECT_TRUE(test::read_bytes(mp4) == "the user's video") << "the user's video changed";
  session::TypedOutputs forced(InputFiles(), true);
  export_as_viewer(e, folder.path, true, true, forced);
  EXPECT_EQ(test::read_bytes(mp4).substr(4, 4), "ftyp");  // an MP4 again
}

}  // namespace
}  // namespace lact
