// The evaluation report: what `lact render` measured per view and per scene, as report.json, report.csv and
// a printed table; and the comparison of two reports (`lact eval-compare`).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lact {

// report.json's `format` field: the one report format this lact writes and eval-compare reads.
constexpr const char* kReportFormat = "lact report v1";

struct ViewReport {
  int index = 0;
  double psnr = 0, ssim = 0, psnr_nearest_input = 0, psnr_white = 0, mse = 0;
  int nearest_input = -1;
  // With --lpips (core/lpips.h): the render's LPIPS and the nearest input's (lower is closer); absent otherwise.
  std::optional<double> lpips, lpips_nearest_input;
};

struct SceneReport {
  std::string name;
  std::string folder;  // where its images went, under --out (the name made safe)
  std::vector<int> inputs, targets;
  // Each target's image file as the data names it (beside `targets`: a report's views name their photo, not only
  // its number); empty in the records of a lact before it.
  std::vector<std::string> target_images;
  int height = 0, width = 0;  // the working size its targets were rendered and scored at (0: not known)
  double encode_s = 0, render_ms_per_view = 0;
  std::vector<ViewReport> views;
  std::vector<std::string> warnings;  // the guard rails' (pipeline/guard_rails.h), each naming the scene
  // Means over the views; psnr_pooled = PSNR of the MSE pooled over every target pixel of the scene.
  double psnr() const;
  double ssim() const;
  double psnr_nearest_input() const;
  double psnr_white() const;  // an all-white prediction: the floor for objects on white
  double psnr_pooled() const;
  // Whether every view has an LPIPS (a run with --lpips), and the means over the views.
  bool has_lpips() const;
  double lpips() const;
  double lpips_nearest_input() const;  // 0 where no view had an input to compare
};

struct Report {
  nlohmann::json header;  // model, config, data, size, views {inputs, targets}
  // report.json's "warnings": every scene's, in order.
  std::vector<SceneReport> scenes;
  std::vector<std::pair<std::string, std::string>> failed;  // scene, error
  // An evaluation still under way (or interrupted): report.json says "complete": false and keeps, under
  // "resume", what --resume needs to finish it (pipeline/resume.h): the run's digest and the scenes not yet
  // done with the folders they will write.
  bool complete = true;
  std::string resume_digest;
  std::vector<std::pair<std::string, std::string>> pending;  // scene, folder
  // The scene under way (the first pending one) with the views written so far: kept per view, so that Ctrl-C
  // in a long scene loses none of its finished views.
  std::optional<SceneReport> partial;
  nlohmann::json to_json() const;
  nlohmann::json resume_json() const;  // the "resume" object of an incomplete report
  // report.csv then report.json, each written atomically (the CSV first: a failed write leaves the record before,
  // never a complete report.json without its CSV); the paths come from the caller (inside --out). An incomplete
  // report writes report.json alone ("complete": false): the CSV has no field to say it is partial.
  void write(const std::string& json_path, const std::string& csv_path) const;
  void print_table() const;
};

// Every field of a scene's report (timings and MSEs included), for ranks to exchange; and back.
nlohmann::json scene_report_to_json(const SceneReport& scene);
SceneReport scene_report_from_json(const nlohmann::json& j);

// Prints per-scene and overall differences B - A; throws Error naming a file that is not a report.
void compare_reports(const std::string& a, const std::string& b);

}  // namespace lact
