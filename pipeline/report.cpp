#include "pipeline/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/metrics.h"
#include "system/error.h"
#include "system/file_io.h"
#include "system/json_text.h"
#include "system/output_files.h"
#include "system/terminal_text.h"
#include "system/utf8_text.h"

namespace lact {

namespace {
template <typename F>
double mean_of(const std::vector<ViewReport>& views, F f) {
  double s = 0;
  for (const ViewReport& v : views) s += f(v);
  return views.empty() ? 0.0 : s / views.size();
}
template <typename F>
double mean_over(const std::vector<SceneReport>& scenes, F f) {
  double s = 0;
  for (const SceneReport& r : scenes) s += f(r);
  return scenes.empty() ? 0.0 : s / scenes.size();
}
}  // namespace

double SceneReport::psnr() const {
  return mean_of(views, [](const ViewReport& v) { return v.psnr; });
}
double SceneReport::ssim() const {
  return mean_of(views, [](const ViewReport& v) { return v.ssim; });
}
double SceneReport::psnr_nearest_input() const {
  return mean_of(views, [](const ViewReport& v) { return v.psnr_nearest_input; });
}
double SceneReport::psnr_white() const {
  return mean_of(views, [](const ViewReport& v) { return v.psnr_white; });
}
double SceneReport::psnr_pooled() const {
  return psnr_from_mse(mean_of(views, [](const ViewReport& v) { return v.mse; }));
}
bool SceneReport::has_lpips() const {
  return !views.empty() && std::all_of(views.begin(), views.end(), [](const ViewReport& v) { return bool(v.lpips); });
}
double SceneReport::lpips() const {
  return mean_of(views, [](const ViewReport& v) { return v.lpips.value_or(0.0); });
}
double SceneReport::lpips_nearest_input() const {
  return mean_of(views, [](const ViewReport& v) { return v.lpips_nearest_input.value_or(0.0); });
}

namespace {
// Whether every scene of the report was measured with LPIPS (a run with --lpips): only then are its means written.
bool every_scene_has_lpips(const std::vector<SceneReport>& scenes) {
  return !scenes.empty() &&
         std::all_of(scenes.begin(), scenes.end(), [](const SceneReport& s) { return s.has_lpips(); });
}
nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}
std::optional<double> optional_number_at(const nlohmann::json& array, size_t i) {
  if (array.size() <= i || array.at(i).is_null()) return std::nullopt;
  return array.at(i).get<double>();
}
// Names may hold bytes that are not UTF-8 (a folder's name): escaped, so the JSON can be written.
std::vector<std::string> escaped_all(const std::vector<std::string>& texts) {
  std::vector<std::string> escaped;
  for (const std::string& t : texts) escaped.push_back(utf8_escaped(t));
  return escaped;
}
}  // namespace

nlohmann::json scene_report_to_json(const SceneReport& s) {
  nlohmann::json views = nlohmann::json::array();
  for (const ViewReport& v : s.views) {
    nlohmann::json view = {v.index, v.psnr, v.ssim, v.psnr_nearest_input, v.psnr_white, v.mse, v.nearest_input};
    if (v.lpips || v.lpips_nearest_input) {  // measured with --lpips; reports without it read as before
      view.push_back(optional_number(v.lpips));
      view.push_back(optional_number(v.lpips_nearest_input));
    }
    views.push_back(view);
  }
  const std::vector<std::string> warnings = escaped_all(s.warnings);  // they name the scene
  return {{"name", utf8_escaped(s.name)},
          {"folder", utf8_escaped(s.folder)},
          {"inputs", s.inputs},
          {"targets", s.targets},
          {"size", {s.height, s.width}},
          {"encode_s", s.encode_s},
          {"render_ms_per_view", s.render_ms_per_view},
          {"views", views},
          {"warnings", warnings},
          {"target_images", escaped_all(s.target_images)}};
}

SceneReport scene_report_from_json(const nlohmann::json& j) {
  SceneReport s;
  s.name = j.at("name").get<std::string>();
  s.folder = j.at("folder").get<std::string>();
  s.inputs = j.at("inputs").get<std::vector<int>>();
  s.targets = j.at("targets").get<std::vector<int>>();
  if (j.contains("size"))  // absent from the reports of a lact before it
    s.height = j.at("size").at(0).get<int>(), s.width = j.at("size").at(1).get<int>();
  s.encode_s = j.at("encode_s").get<double>();
  s.render_ms_per_view = j.at("render_ms_per_view").get<double>();
  for (const nlohmann::json& v : j.at("views"))
    s.views.push_back({v.at(0).get<int>(), v.at(1).get<double>(), v.at(2).get<double>(), v.at(3).get<double>(),
                       v.at(4).get<double>(), v.at(5).get<double>(), v.at(6).get<int>(), optional_number_at(v, 7),
                       optional_number_at(v, 8)});
  s.warnings = j.at("warnings").get<std::vector<std::string>>();
  if (j.contains("target_images")) s.target_images = j.at("target_images").get<std::vector<std::string>>();
  return s;
}

nlohmann::json Report::resume_json() const {
  nlohmann::json done = nlohmann::json::array(), waiting = nlohmann::json::array();
  for (const SceneReport& s : scenes) done.push_back(scene_report_to_json(s));
  for (const auto& [name, folder] : pending) waiting.push_back({{"name", utf8_escaped(name)}, {"folder", folder}});
  nlohmann::json resume = {{"digest", resume_digest}, {"header", header}, {"done", done}, {"pending", waiting}};
  if (partial) resume["partial"] = scene_report_to_json(*partial);
  return resume;
}

namespace {

nlohmann::json view_json(const ViewReport& v) {
  nlohmann::json view = {{"index", v.index},
                         {"psnr", v.psnr},
                         {"ssim", v.ssim},
                         {"psnr_nearest_input", v.psnr_nearest_input},
                         {"psnr_white", v.psnr_white},
                         {"nearest_input", v.nearest_input}};
  if (v.lpips) view["lpips"] = *v.lpips;
  if (v.lpips_nearest_input) view["lpips_nearest_input"] = *v.lpips_nearest_input;
  return view;
}

nlohmann::json scene_json(const SceneReport& s) {
  nlohmann::json views = nlohmann::json::array();
  for (const ViewReport& v : s.views) {
    views.push_back(view_json(v));
    const auto at = std::find(s.targets.begin(), s.targets.end(), v.index);
    const size_t i = static_cast<size_t>(at - s.targets.begin());
    if (i < s.target_images.size()) views.back()["image"] = utf8_escaped(s.target_images[i]);
  }
  nlohmann::json scene = {{"name", s.name},
                          {"folder", s.folder},
                          {"inputs", s.inputs},
                          {"targets", s.targets},
                          {"encode_s", s.encode_s},
                          {"render_ms_per_view", s.render_ms_per_view},
                          {"psnr", s.psnr()},
                          {"psnr_pooled", s.psnr_pooled()},
                          {"ssim", s.ssim()},
                          {"psnr_nearest_input", s.psnr_nearest_input()},
                          {"psnr_white", s.psnr_white()}};
  if (s.height > 0) scene["size"] = {s.height, s.width};  // the header's `size` is the first scene's
  if (s.has_lpips()) {
    scene["lpips"] = s.lpips();
    scene["lpips_nearest_input"] = s.lpips_nearest_input();
  }
  scene["views"] = views;
  return scene;
}

}  // namespace

nlohmann::json Report::to_json() const {
  nlohmann::json j = header;
  j["format"] = kReportFormat;
  j["scenes"] = nlohmann::json::array();
  double encode_total = 0;
  for (const SceneReport& s : scenes) {
    j["scenes"].push_back(scene_json(s));
    encode_total += s.encode_s;
  }
  j["psnr"] = mean_over(scenes, [](const SceneReport& s) { return s.psnr(); });
  j["psnr_pooled"] = mean_over(scenes, [](const SceneReport& s) { return s.psnr_pooled(); });
  j["ssim"] = mean_over(scenes, [](const SceneReport& s) { return s.ssim(); });
  j["psnr_nearest_input"] = mean_over(scenes, [](const SceneReport& s) { return s.psnr_nearest_input(); });
  j["psnr_white"] = mean_over(scenes, [](const SceneReport& s) { return s.psnr_white(); });
  if (every_scene_has_lpips(scenes)) {
    j["lpips"] = mean_over(scenes, [](const SceneReport& s) { return s.lpips(); });
    j["lpips_nearest_input"] = mean_over(scenes, [](const SceneReport& s) { return s.lpips_nearest_input(); });
  }
  j["encode_s_total"] = encode_total;
  j["render_ms_per_view"] = mean_over(scenes, [](const SceneReport& s) { return s.render_ms_per_view; });
  j["warnings"] = nlohmann::json::array();
  for (const SceneReport& s : scenes)
    for (const std::string& warning : s.warnings) j["warnings"].push_back(warning);
  j["failed"] = nlohmann::json::array();
  for (const auto& [name, error] : failed) j["failed"].push_back({{"scene", name}, {"error", error}});
  j["complete"] = complete;
  if (!complete) j["resume"] = resume_json();
  return j;
}

namespace {

// report.csv: a row a view, every scene's.
std::string csv_text(const std::vector<SceneReport>& scenes) {
  std::ostringstream csv;
  const bool lpips = std::any_of(scenes.begin(), scenes.end(), [](const SceneReport& s) { return s.has_lpips(); });
  csv << "scene,view,psnr,ssim,psnr_nearest_input,psnr_white,nearest_input"
      << (lpips ? ",lpips,lpips_nearest_input" : "") << "\n";
  const auto optional_field = [](const std::optional<double>& value) {
    std::ostringstream field;
    if (value) field << *value;
    return field.str();
  };
  for (const SceneReport& s : scenes)
    for (const ViewReport& v : s.views) {
      csv << csv_field(s.name) << "," << v.index << "," << v.psnr << "," << v.ssim << "," << v.psnr_nearest_input << ","
          << v.psnr_white << "," << v.nearest_input;
      if (lpips) csv << "," << optional_field(v.lpips) << "," << optional_field(v.lpips_nearest_input);
      csv << "\n";
    }
  return csv.str();
}

}  // namespace

void Report::write(const std::string& json_path, const std::string& csv_path) const {
  // A CSV of the scenes done so far cannot say so (it would read as the whole evaluation): an incomplete report
  // writes none. A complete one writes it first, so that report.json's "complete": true is the last word: a CSV
  // write that fails (a full disk) leaves the incomplete record in place, which --resume finishes.
  if (complete) write_file_atomically(csv_path, csv_text(scenes));
  // Names and paths come from data: bytes that are not UTF-8 are written as \xNN (see system/utf8_text.h).
  write_file_atomically(json_path, with_utf8_strings(to_json()).dump(1) + "\n");
}

void Report::print_table() const {
  // With --lpips, two more columns: the renders' LPIPS and the nearest inputs' (lower is closer).
  const bool lpips = every_scene_has_lpips(scenes);
  const auto lpips_cells = [lpips](double render, double nearest) {
    char cells[32] = "";
    if (lpips) std::snprintf(cells, sizeof(cells), " %7.4f %10.4f", render, nearest);
    return std::string(cells);
  };
  std::printf("\n%-24s %6s %8s %8s %7s %10s %7s %9s %10s%s\n", "scene", "views", "PSNR", "pooled", "SSIM", "nearest-in",
              "white", "encode s", "render ms", lpips ? "   LPIPS nearest-in" : "");
  for (const SceneReport& s : scenes)
    std::printf("%s %6zu %8.3f %8.3f %7.4f %10.3f %7.3f %9.3f %10.1f%s\n", terminal_column(s.name, 24).c_str(),
                s.views.size(), s.psnr(), s.psnr_pooled(), s.ssim(), s.psnr_nearest_input(), s.psnr_white(), s.encode_s,
                s.render_ms_per_view, lpips_cells(s.lpips(), s.lpips_nearest_input()).c_str());
  const nlohmann::json j = to_json();
  std::printf("%-24s %6s %8.3f %8.3f %7.4f %10.3f %7.3f %9.3f %10.1f%s\n", "mean over scenes", "",
              j["psnr"].get<double>(), j["psnr_pooled"].get<double>(), j["ssim"].get<double>(),
              j["psnr_nearest_input"].get<double>(), j["psnr_white"].get<double>(),
              mean_over(scenes, [](const SceneReport& s) { return s.encode_s; }), j["render_ms_per_view"].get<double>(),
              lpips_cells(j.value("lpips", 0.0), j.value("lpips_nearest_input", 0.0)).c_str());
  for (const auto& [name, error] : failed)
    std::printf("FAILED %s: %s\n", terminal_text(name).c_str(), terminal_text(error).c_str());
}

namespace {

// The overall numbers eval-compare shows, each checked to be a number where a report has it.
constexpr const char* kOverallKeys[] = {
    "psnr",          "psnr_pooled", "ssim", "psnr_nearest_input", "lpips", "lpips_nearest_input", "render_ms_per_view",
    "encode_s_total"};

// A report's number at `key` (in `object`), or Error naming the file.
double number_in(const nlohmann::json& object, const char* key, const std::string& path) {
  if (!object.is_object() || !object.contains(key) || !object.at(key).is_number())
    throw Error(path, std::string("not a lact report.json (no number '") + key + "')");
  return object.at(key).get<double>();
}

// A report's `format` field: the one this lact writes, else Error naming the file and the field (a JSON that is
// no lact report has none; a newer lact's report may hold what this one would misread).
void check_report_format(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object() || !j.contains("format"))
    throw Error(path, "not a lact report.json (no field 'format'; lact writes \"" + std::string(kReportFormat) + "\")");
  const nlohmann::json& format = j.at("format");
  if (format.is_string() && format.get<std::string>() == kReportFormat) return;
  const bool lacts = format.is_string() && format.get<std::string>().rfind("lact report", 0) == 0;
  const std::string given = format.is_string() ? "'" + terminal_text(format.get<std::string>().substr(0, 80)) + "'"
                                               : std::string("a JSON ") + format.type_name();
  throw Error(path, "field 'format' is " + given +
                        (lacts ? ", a report format this lact does not read (it reads \""
                               : ", not a lact report.json (lact writes \"") +
                        kReportFormat + "\")");
}

nlohmann::json load_report(const std::string& path) {
  const nlohmann::json j = parse_json_text(read_whole_file(path, uint64_t{1} << 30), path);
  check_report_format(j, path);
  if (!j.contains("scenes") || !j.at("scenes").is_array() || !j.contains("psnr"))
    throw Error(path, "not a lact report.json");
  for (const nlohmann::json& s : j.at("scenes")) {
    if (!s.is_object() || !s.contains("name") || !s.at("name").is_string())
      throw Error(path, "not a lact report.json (a scene without a name)");
    number_in(s, "psnr", path);
    number_in(s, "ssim", path);
    if (s.contains("lpips")) number_in(s, "lpips", path);
  }
  for (const char* key : kOverallKeys)
    if (j.contains(key)) number_in(j, key, path);
  return j;
}

// The scenes of a report by name; a name given twice is warned about (the later scene is compared).
std::map<std::string, const nlohmann::json*> scenes_by_name(const nlohmann::json& report, const std::string& path) {
  std::map<std::string, const nlohmann::json*> scenes;
  for (const auto& s : report["scenes"]) {
    const std::string name = s["name"].get<std::string>();
    if (scenes.count(name))
      std::fprintf(stderr, "lact: warning: %s: two scenes are named '%s'; the later one is compared\n",
                   terminal_text(path).c_str(), terminal_text(name).c_str());
    scenes[name] = &s;
  }
  return scenes;
}

// Refuses two reports with no scene in common (every difference would be empty) and warns where their scores
// are not like for like: another working size or other target views (a note for another model, which is what
// a comparison is often for).
void check_comparable(const nlohmann::json& a, const nlohmann::json& b, const std::string& a_path,
                      const std::string& b_path) {
  const auto in_a = scenes_by_name(a, a_path), in_b = scenes_by_name(b, b_path);
  bool common = false;
  for (const auto& entry : in_b) common = common || in_a.count(entry.first) > 0;
  if (!common) throw Error(b_path, "has no scene in common with " + a_path + ": nothing to compare");
  const auto differ = [&](const char* key) { return a.contains(key) && b.contains(key) && a[key] != b[key]; };
  const auto shown = [](const nlohmann::json& v) {
    return terminal_text(v.is_string() ? v.get<std::string>() : v.dump());
  };
  if (differ("size"))
    std::fprintf(stderr, "lact: warning: A is at size %s and B at %s: their scores are not like for like\n",
                 shown(a["size"]).c_str(), shown(b["size"]).c_str());
  for (const auto& [name, scene_b] : in_b) {
    const auto it = in_a.find(name);
    if (it == in_a.end() || !it->second->contains("targets") || !scene_b->contains("targets")) continue;
    if ((*it->second)["targets"] != (*scene_b)["targets"])
      std::fprintf(stderr, "lact: warning: scene '%s' has other target views in A and B: not like for like\n",
                   terminal_text(name).c_str());
    const nlohmann::json& scene_a = *it->second;  // a scene's own size (reports since lact wrote it)
    if (!differ("size") && scene_a.contains("size") && scene_b->contains("size") &&
        scene_a["size"] != (*scene_b)["size"])
      std::fprintf(stderr, "lact: warning: scene '%s' is at size %s in A and %s in B: not like for like\n",
                   terminal_text(name).c_str(), shown(scene_a["size"]).c_str(), shown((*scene_b)["size"]).c_str());
  }
  // LPIPS with two backbones is two scales; a report without lpips_net was measured with AlexNet (lact before VGG16).
  const auto lpips_net = [&](const nlohmann::json& r) {
    return r.contains("lpips_net") ? shown(r["lpips_net"]) : std::string("alex");
  };
  if (a.contains("lpips") && b.contains("lpips") && lpips_net(a) != lpips_net(b))
    std::fprintf(stderr, "lact: warning: A's LPIPS is measured with --lpips-net %s and B's with %s: not comparable\n",
                 lpips_net(a).c_str(), lpips_net(b).c_str());
  // Paths are recorded as given (relative to where each run started); the content identity says whether they name
  // one model. Reports from before lact recorded it fall back to the paths.
  if (!a.contains("model") || !b.contains("model")) return;
  const bool identities = a.contains("model_identity") && b.contains("model_identity");
  if (identities && differ("model_identity") && !differ("model"))
    std::fprintf(stderr, "lact: warning: A and B name the model %s, but its file changed between them\n",
                 shown(a["model"]).c_str());
  else if (identities ? differ("model_identity") : differ("model"))
    std::fprintf(stderr, "lact: note: A comes from the model %s, B from %s\n", shown(a["model"]).c_str(),
                 shown(b["model"]).c_str());
}

}  // namespace

namespace {

// One line of the comparison, read in full before anything is printed (a field that is not a number fails the
// command with its one line, not half way through the table).
struct ComparedScene {
  std::string name;
  const char* only = nullptr;  // "A" or "B" where the scene is in one report only
  double psnr[2] = {}, ssim[2] = {}, lpips[2] = {};
};

std::vector<ComparedScene> compared_scenes(const nlohmann::json& a, const nlohmann::json& b, const std::string& a_path,
                                           const std::string& b_path, bool lpips) {
  std::map<std::string, const nlohmann::json*> in_a;
  for (const auto& s : a["scenes"]) in_a[s["name"].get<std::string>()] = &s;
  std::vector<ComparedScene> rows;
  for (const auto& s : b["scenes"]) {
    ComparedScene row;
    row.name = s["name"].get<std::string>();
    auto it = in_a.find(row.name);
    if (it == in_a.end()) {
      row.only = "B";
      rows.push_back(row);
      continue;
    }
    row.psnr[0] = number_in(*it->second, "psnr", a_path), row.psnr[1] = number_in(s, "psnr", b_path);
    row.ssim[0] = number_in(*it->second, "ssim", a_path), row.ssim[1] = number_in(s, "ssim", b_path);
    if (lpips) row.lpips[0] = number_in(*it->second, "lpips", a_path), row.lpips[1] = number_in(s, "lpips", b_path);
    rows.push_back(row);
    in_a.erase(it);
  }
  for (const auto& entry : in_a) {
    ComparedScene row;
    row.name = entry.first;
    row.only = "A";
    rows.push_back(row);
  }
  return rows;
}

// The overall rows are each report's own means: an interrupted run's cover its finished scenes only, so its
// overall difference from a finished run's is not like for like (the per-scene rows are). Before, nothing said so.
void warn_incomplete(const nlohmann::json& report, const std::string& path) {
  if (report.contains("complete") && report["complete"] == false)
    std::fprintf(stderr,
                 "lact: warning: %s is the report of an unfinished run (\"complete\": false): its overall rows cover "
                 "its finished scenes only (render --resume finishes it)\n",
                 terminal_text(path).c_str());
}

}  // namespace

void compare_reports(const std::string& a_path, const std::string& b_path) {
  const nlohmann::json a = load_report(a_path), b = load_report(b_path);
  check_comparable(a, b, a_path, b_path);
  warn_incomplete(a, a_path);
  warn_incomplete(b, b_path);
  // LPIPS columns where both reports measured it (runs with --lpips).
  const bool lpips = a.contains("lpips") && b.contains("lpips");
  const std::vector<ComparedScene> rows = compared_scenes(a, b, a_path, b_path, lpips);
  std::vector<std::pair<const char*, std::pair<double, double>>> overall;
  for (const char* key : kOverallKeys)
    if (a.contains(key) && b.contains(key))
      overall.push_back({key, {number_in(a, key, a_path), number_in(b, key, b_path)}});
  std::printf("%-24s %9s %9s %8s %9s %9s %8s%s\n", "scene", "PSNR A", "PSNR B", "diff", "SSIM A", "SSIM B", "diff",
              lpips ? "   LPIPS A   LPIPS B     diff" : "");
  for (const ComparedScene& r : rows) {
    if (r.only) {
      std::printf("%s only in %s\n", terminal_column(r.name, 24).c_str(), r.only);
      continue;
    }
    std::printf("%s %9.3f %9.3f %+8.3f %9.4f %9.4f %+8.4f", terminal_column(r.name, 24).c_str(), r.psnr[0], r.psnr[1],
                r.psnr[1] - r.psnr[0], r.ssim[0], r.ssim[1], r.ssim[1] - r.ssim[0]);
    if (lpips) std::printf(" %9.4f %9.4f %+8.4f", r.lpips[0], r.lpips[1], r.lpips[1] - r.lpips[0]);
    std::printf("\n");
  }
  for (const auto& [key, v] : overall)
    std::printf("overall %-20s A %10.4f  B %10.4f  B-A %+10.4f\n", key, v.first, v.second, v.second - v.first);
}

}  // namespace lact
