// The names typed in the desktop viewer's window (screenshot, camera path file) against the rules of every named
// output (session/typed_outputs.h): never one of the session's inputs, never under /dev, /proc or /sys, never an
// existing file without --force. The reference is the file system: what exists, what the inputs' bytes are.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/camera_geometry.h"
#include "datasets/camera_path_io.h"
#include "session/path_recorder.h"
#include "session/typed_outputs.h"
#include "system/error.h"
#include "system/file_io.h"
#include "tests/common/test_util.h"

namespace lact::session {
namespace {

namespace fs = std::filesystem;

// The error `check` throws (a failure when it throws none, or another type: the viewer shows lact::Error only).
template <typename Check>
std::string refusal(Check check) {
  try {
    check();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "not refused";
  return "";
}

// A session in a fresh folder: model.safetensors, state.lact, data/transforms.json (the camera file) and the
// images data/000.png, data/001.png; the working folder is the session folder while a test runs.
class TypedOutputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/lact_typed_outputs_XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    root_ = name;
    previous_ = fs::current_path();
    fs::current_path(root_);
    fs::create_directory("data");
    for (const char* file : {"model.safetensors", "state.lact", "data/transforms.json", "data/000.png", "data/001.png"})
      test::write_bytes(file, std::string("input ") + file);
    source_.model_path = "model.safetensors";
    source_.state_path = "state.lact";
    source_.selection.scene.source = "data/transforms.json";
    for (const char* image : {"data/000.png", "data/001.png"}) {
      SceneView view;
      view.image_path = root_ / image;  // as a reader resolves it: another spelling of the same file
      source_.selection.scene.views.push_back(view);
    }
  }
  void TearDown() override {
    fs::current_path(previous_);
    fs::remove_all(root_);
  }
  TypedOutputs outputs(bool force) const { return TypedOutputs(session_inputs(source_), force); }

  fs::path root_, previous_;
  SceneSource source_;
};

TEST_F(TypedOutputsTest, ScreenshotNamesStandForThreeFiles) {
  const std::vector<std::string> expected{"a/shot.png", "a/shot.view.png", "a/shot.json"};
  EXPECT_EQ(screenshot_files("a/shot.png"), expected);
  EXPECT_EQ(screenshot_files("a/shot"), expected);
}

TEST_F(TypedOutputsTest, AnInputIsRefusedEvenWithForce) {
  for (bool force : {false, true}) {
    // The image itself, the image through the stem (PATH.png), the camera file through PATH.json.
    for (const char* typed : {"data/000.png", "data/000", "./data/../data/001.png"}) {
      const std::string message = refusal([&] { outputs(force).check_screenshot(typed); });
      EXPECT_EQ(message.rfind("screenshot: '", 0), 0u) << message;
      EXPECT_NE(message.find("is one of this run's inputs"), std::string::npos) << message;
    }
    const std::string camera_file = refusal([&] { outputs(force).check_screenshot("data/transforms"); });
    EXPECT_NE(camera_file.find("data/transforms.json' is one of this run's inputs"), std::string::npos) << camera_file;
    for (const char* typed : {"data/transforms.json", "model.safetensors", "state.lact", "data/001.png"}) {
      const std::string message = refusal([&] { outputs(force).check_path_file(typed); });
      EXPECT_EQ(message.rfind("path file: '", 0), 0u) << message;  // the file as it really is (resolved)
      const std::string named = fs::path(typed).filename().string() + "' is one of this run's inputs";
      EXPECT_NE(message.find(named), std::string::npos) << message;
    }
  }
}

TEST_F(TypedOutputsTest, ALinkToAnInputIsRefused) {
  fs::create_symlink(root_ / "data/transforms.json", "path.json");
  const std::string message = refusal([&] { outputs(true).check_path_file("path.json"); });
  EXPECT_NE(message.find("is one of this run's inputs"), std::string::npos) << message;
}

TEST_F(TypedOutputsTest, AnExistingFileNeedsForce) {
  test::write_bytes("mine.json", "the user's own");
  const std::string message = refusal([&] { outputs(false).check_path_file("mine.json"); });
  EXPECT_EQ(message,
            "path file: 'mine.json' exists (type another name, or start lact view with --force to replace it)");
  EXPECT_NO_THROW(outputs(true).check_path_file("mine.json"));

  test::write_bytes("shot.json", "the user's own");  // one of the three is enough to refuse the screenshot
  const std::string shot = refusal([&] { outputs(false).check_screenshot("shot.png"); });
  EXPECT_NE(shot.find("'shot.json' exists"), std::string::npos) << shot;
  EXPECT_FALSE(fs::exists("shot.png"));
  EXPECT_NO_THROW(outputs(true).check_screenshot("shot.png"));
}

TEST_F(TypedOutputsTest, NewNamesAreWritten) {
  EXPECT_NO_THROW(outputs(false).check_screenshot("lact_view_000.png"));
  EXPECT_NO_THROW(outputs(false).check_screenshot("shots/new/a.png"));  // the screenshot makes its folder
  EXPECT_NO_THROW(outputs(false).check_path_file("camera_path.json"));
  const std::string missing = refusal([&] { outputs(false).check_path_file("nowhere/p.json"); });
  EXPECT_NE(missing.find("does not exist"), std::string::npos) << missing;
}

// A folder's name typed in the screenshot field ("shots/", an existing folder with its slash, ".") is refused, even
// with --force: it stood for the hidden files shots/.png, shots/.view.png and shots/.json. The reference: the
// folders hold nothing afterwards. A folder's name without the slash is a file name beside it, as on the command
// line (shots -> shots.png).
TEST_F(TypedOutputsTest, AFolderNameIsNoScreenshotName) {
  fs::create_directory("shots");
  for (const char* typed : {"shots/", "new_folder/", ".", "..", "shots/.", "/"}) {
    const std::string message = refusal([&] { outputs(true).check_screenshot(typed); });
    EXPECT_EQ(message, std::string("screenshot: '") + typed +
                           "' names a folder, not a screenshot file (add a file name, such as shot.png)");
  }
  EXPECT_TRUE(fs::is_empty("shots"));
  EXPECT_FALSE(fs::exists("new_folder"));
  EXPECT_EQ(screenshot_files("shots")[0], "shots.png");
  EXPECT_NO_THROW(outputs(false).check_screenshot("shots"));
  EXPECT_NO_THROW(outputs(false).check_screenshot("shots/view.png"));
}

TEST_F(TypedOutputsTest, SystemFoldersAndEmptyNamesAreRefused) {
  for (const char* typed : {"/dev/null", "/dev/shm/lact_typed_path.json", "/proc/self/fd/1", "/sys/kernel/x.json"}) {
    const std::string message = refusal([&] { outputs(true).check_path_file(typed); });
    EXPECT_EQ(message.rfind("path file: ", 0), 0u) << message;
    EXPECT_NE(message.find("/dev, /proc or /sys"), std::string::npos) << message;
  }
  const std::string shot = refusal([&] { outputs(true).check_screenshot("/dev/shm/lact_typed_shot"); });
  EXPECT_NE(shot.find("/dev, /proc or /sys"), std::string::npos) << shot;
  EXPECT_EQ(refusal([&] { outputs(true).check_screenshot(""); }), "screenshot: empty file name");
  EXPECT_EQ(refusal([&] { outputs(true).check_path_file(""); }), "path file: empty file name");
}

// The viewer's order (check, then save): a refused name leaves the input's bytes as they were, and every refusal
// is one line.
TEST_F(TypedOutputsTest, ARefusedSaveLeavesTheInputAlone) {
  PathRecorder recorder;
  recorder.add_key(turntable_path(2, 32, 32)[0]);
  const std::string before = test::read_bytes("data/transforms.json");
  const std::string message = refusal([&] {
    outputs(true).check_path_file("data/transforms.json");
    recorder.save("data/transforms.json", PathFrame());
  });
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(test::read_bytes("data/transforms.json"), before);
  outputs(false).check_path_file("camera_path.json");
  recorder.save("camera_path.json", PathFrame());
  EXPECT_TRUE(fs::exists("camera_path.json"));
}

// The window's own earlier save is this session's file: saving again under that name (or another spelling of it)
// replaces it without --force. The reference: the file holds the second path's frames; the user's file beside it,
// at another name, is still refused and keeps its bytes.
TEST_F(TypedOutputsTest, SavingTwiceUnderOneNameReplacesTheSessionsOwnFile) {
  test::write_bytes("mine.json", "the user's own");
  TypedOutputs typed = outputs(false);
  PathRecorder recorder;
  recorder.add_key(turntable_path(2, 32, 32)[0]);
  typed.check_path_file("camera_path.json");
  recorder.save("camera_path.json", PathFrame());
  typed.wrote("camera_path.json");
  for (const std::string& spelling : {std::string("camera_path.json"), (root_ / "camera_path.json").string()}) {
    recorder.add_key(turntable_path(2, 32, 32)[1]);
    EXPECT_NO_THROW({
      typed.check_path_file(spelling);
      recorder.save(spelling, PathFrame());
      typed.wrote(spelling);
    }) << spelling;
    EXPECT_EQ(read_camera_path("camera_path.json").size(), recorder.path().size()) << spelling;
  }
  const std::string other = refusal([&] { typed.check_path_file("mine.json"); });
  EXPECT_NE(other.find("'mine.json' exists"), std::string::npos) << other;
  EXPECT_EQ(test::read_bytes("mine.json"), "the user's own");

  // A screenshot's three files, written the second time over the first ones.
  for (const char* round : {"first", "second"}) {
    EXPECT_NO_THROW({
      typed.check_screenshot("shot.png");
      for (const std::string& file : screenshot_files("shot.png")) {
        write_file_atomically(file, round);
        typed.wrote(file);
      }
    }) << round;
    EXPECT_EQ(test::read_bytes("shot.view.png"), round);
  }
}

// The user put another file at the session's name (a new inode; the same bytes and modification time, so only
// the file's identity tells): it is the user's, refused without --force.
TEST_F(TypedOutputsTest, AFileTheUserPutAtTheSessionsNameIsRefused) {
  TypedOutputs typed = outputs(false);
  typed.check_path_file("camera_path.json");
  write_file_atomically("camera_path.json", "the session's path");
  typed.wrote("camera_path.json");
  test::write_bytes("replacement.json", test::read_bytes("camera_path.json"));
  fs::last_write_time("replacement.json", fs::last_write_time("camera_path.json"));
  fs::rename("replacement.json", "camera_path.json");
  const std::string message = refusal([&] { typed.check_path_file("camera_path.json"); });
  EXPECT_EQ(message,
            "path file: 'camera_path.json' exists (type another name, or start lact view with --force to replace it)");
  EXPECT_NO_THROW(outputs(true).check_path_file("camera_path.json"));
}

// The user edited the session's file in place (the same inode): longer, or as long with another modification time.
TEST_F(TypedOutputsTest, AFileTheUserEditedInPlaceIsRefused) {
  TypedOutputs typed = outputs(false);
  for (const char* name : {"longer.json", "touched.json"}) {
    typed.check_path_file(name);
    write_file_atomically(name, "the session's path");
    typed.wrote(name);
  }
  std::ofstream(fs::path("longer.json"), std::ios::binary | std::ios::app) << " and the user's note";
  const fs::file_time_type written = fs::last_write_time("touched.json");
  std::ofstream(fs::path("touched.json"), std::ios::binary | std::ios::in | std::ios::out) << "THE";  // same size
  fs::last_write_time("touched.json", written + std::chrono::seconds(1));
  EXPECT_EQ(test::read_bytes("touched.json"), "THE session's path");
  for (const char* name : {"longer.json", "touched.json"}) {
    const std::string message = refusal([&] { typed.check_path_file(name); });
    EXPECT_NE(message.find(std::string("'") + name + "' exists"), std::string::npos) << message;
  }
  EXPECT_EQ(test::read_bytes("longer.json"), "the session's path and the user's note");
}

}  // namespace
}  // namespace lact::session
