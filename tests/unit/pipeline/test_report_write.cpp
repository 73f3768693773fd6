// Report::write's order: a complete report's CSV before its report.json, so a CSV that cannot be written (a full
// disk) leaves the record that was there ("complete": false, which --resume finishes), never a complete report.json
// without its CSV. The CSV's rows are checked against values written here by hand.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "pipeline/report.h"

namespace lact {
namespace {

namespace fs = std::filesystem;

struct Folder {
  fs::path path;
  Folder() {
    std::string name = (fs::temp_directory_path() / "lact_report_write_XXXXXX").string();
    path = mkdtemp(name.data()) ? name : "";
  }
  ~Folder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Report one_scene_report() {
  Report report;
  SceneReport scene;
  scene.name = "s00", scene.folder = "s00", scene.targets = {3};
  ViewReport view;
  view.index = 3, view.psnr = 20.5, view.ssim = 0.75, view.psnr_nearest_input = 12.25, view.psnr_white = 8;
  view.nearest_input = 1;
  scene.views = {view};
  report.scenes = {scene};
  return report;
}

TEST(ReportWrite, WritesTheCsvAndTheReport) {
  Folder out;
  ASSERT_FALSE(out.path.empty());
  one_scene_report().write((out.path / "report.json").string(), (out.path / "report.csv").string());
  EXPECT_EQ(read_text(out.path / "report.csv"),
            "scene,view,psnr,ssim,psnr_nearest_input,psnr_white,nearest_input\ns00,3,20.5,0.75,12.25,8,1\n");
  EXPECT_NE(read_text(out.path / "report.json").find("\"complete\": true"), std::string::npos);
}

TEST(ReportWrite, ACsvThatCannotBeWrittenLeavesTheRecordAsItWas) {
  Folder out;
  ASSERT_FALSE(out.path.empty());
  const fs::path json = out.path / "report.json";
  Report record = one_scene_report();
  record.complete = false;
  record.write(json.string(), (out.path / "report.csv").string());
  const std::string before = read_text(json);
  EXPECT_FALSE(fs::exists(out.path / "report.csv"));  // an incomplete report writes no CSV
  // The CSV's folder is missing: its write fails as a full disk's would.
  EXPECT_ANY_THROW(one_scene_report().write(json.string(), (out.path / "gone" / "report.csv").string()));
  EXPECT_EQ(read_text(json), before);
  EXPECT_NE(before.find("\"complete\": false"), std::string::npos);
}

}  // namespace
}  // namespace lact
