#include "app/report.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/metrics.h"

namespace lact::app {

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

double SceneReport::psnr() const { return mean_of(views, [](const ViewReport& v) { return v.psnr; }); }
double SceneReport::ssim() const { return mean_of(views, [](const ViewReport& v) { return v.ssim; }); }
double SceneReport::psnr_nearest_input() const {
  return mean_of(views, [](const ViewReport& v) { return v.psnr_nearest_input; });
}
double SceneReport::psnr_white() const { return mean_of(views, [](const ViewReport& v) { return v.psnr_white; }); }
double SceneReport::psnr_pooled() const { return psnr_from_mse(mean_of(views, [](const ViewReport& v) { return v.mse; })); }

nlohmann::json Report::to_json() const {
  nlohmann::json j = header;
  j["scenes"] = nlohmann::json::array();
  double encode_total = 0;
  for (const SceneReport& s : scenes) {
    nlohmann::json views = nlohmann::json::array();
    for (const ViewReport& v : s.views)
      views.push_back({{"index", v.index}, {"psnr", v.psnr}, {"ssim", v.ssim}, {"psnr_nearest_input", v.psnr_nearest_input},
                       {"psnr_white", v.psnr_white}, {"nearest_input", v.nearest_input}});
    j["scenes"].push_back({{"name", s.name}, {"inputs", s.inputs}, {"targets", s.targets}, {"encode_s", s.encode_s},
                           {"render_ms_per_view", s.render_ms_per_view}, {"psnr", s.psnr()},
                           {"psnr_pooled", s.psnr_pooled()}, {"ssim", s.ssim()},
                           {"psnr_nearest_input", s.psnr_nearest_input()}, {"psnr_white", s.psnr_white()},
                           {"views", views}});
    encode_total += s.encode_s;
  }
  j["psnr"] = mean_over(scenes, [](const SceneReport& s) { return s.psnr(); });
  j["psnr_pooled"] = mean_over(scenes, [](const SceneReport& s) { return s.psnr_pooled(); });
  j["ssim"] = mean_over(scenes, [](const SceneReport& s) { return s.ssim(); });
  j["psnr_nearest_input"] = mean_over(scenes, [](const SceneReport& s) { return s.psnr_nearest_input(); });
  j["psnr_white"] = mean_over(scenes, [](const SceneReport& s) { return s.psnr_white(); });
  j["encode_s_total"] = encode_total;
  j["render_ms_per_view"] = mean_over(scenes, [](const SceneReport& s) { return s.render_ms_per_view; });
  j["failed"] = nlohmann::json::array();
  for (const auto& [name, error] : failed) j["failed"].push_back({{"scene", name}, {"error", error}});
  return j;
}

void Report::write(const std::string& folder) const {
  const std::string json_path = folder + "/report.json", csv_path = folder + "/report.csv";
  std::ofstream json(json_path);
  if (!json) throw Error(json_path, "cannot open for writing");
  json << to_json().dump(1) << "\n";
  std::ofstream csv(csv_path);
  if (!csv) throw Error(csv_path, "cannot open for writing");
  csv << "scene,view,psnr,ssim,psnr_nearest_input,psnr_white,nearest_input\n";
  for (const SceneReport& s : scenes)
    for (const ViewReport& v : s.views)
      csv << s.name << "," << v.index << "," << v.psnr << "," << v.ssim << "," << v.psnr_nearest_input << ","
          << v.psnr_white << "," << v.nearest_input << "\n";
  if (!json || !csv) throw Error(folder, "writing the report failed");
}

void Report::print_table() const {
  std::printf("\n%-24s %6s %8s %8s %7s %10s %7s %9s %10s\n", "scene", "views", "PSNR", "pooled", "SSIM", "nearest-in",
              "white", "encode s", "render ms");
  for (const SceneReport& s : scenes)
    std::printf("%-24.24s %6zu %8.3f %8.3f %7.4f %10.3f %7.3f %9.3f %10.1f\n", s.name.c_str(), s.views.size(), s.psnr(),
                s.psnr_pooled(), s.ssim(), s.psnr_nearest_input(), s.psnr_white(), s.encode_s, s.render_ms_per_view);
  const nlohmann::json j = to_json();
  std::printf("%-24s %6s %8.3f %8.3f %7.4f %10.3f %7.3f %9.3f %10.1f\n", "mean over scenes", "", j["psnr"].get<double>(),
              j["psnr_pooled"].get<double>(), j["ssim"].get<double>(), j["psnr_nearest_input"].get<double>(),
              j["psnr_white"].get<double>(), j["encode_s_total"].get<double>(), j["render_ms_per_view"].get<double>());
  for (const auto& [name, error] : failed) std::printf("FAILED %s: %s\n", name.c_str(), error.c_str());
}

void compare_reports(const std::string& a_path, const std::string& b_path) {
  auto load = [](const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error(path, "cannot open file");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception&) {
      throw Error(path, "corrupt JSON");
    }
    if (!j.is_object() || !j.contains("scenes") || !j.contains("psnr")) throw Error(path, "not a lact report.json");
    return j;
  };
  const nlohmann::json a = load(a_path), b = load(b_path);
  std::map<std::string, const nlohmann::json*> in_a;
  for (const auto& s : a["scenes"]) in_a[s.value("name", "")] = &s;
  std::printf("%-24s %9s %9s %8s %9s %9s %8s\n", "scene", "PSNR A", "PSNR B", "diff", "SSIM A", "SSIM B", "diff");
  for (const auto& s : b["scenes"]) {
    const std::string name = s.value("name", "");
    auto it = in_a.find(name);
    if (it == in_a.end()) {
      std::printf("%-24.24s only in B\n", name.c_str());
      continue;
    }
    const auto& sa = *it->second;
    std::printf("%-24.24s %9.3f %9.3f %+8.3f %9.4f %9.4f %+8.4f\n", name.c_str(), sa["psnr"].get<double>(),
                s["psnr"].get<double>(), s["psnr"].get<double>() - sa["psnr"].get<double>(), sa["ssim"].get<double>(),
                s["ssim"].get<double>(), s["ssim"].get<double>() - sa["ssim"].get<double>());
    in_a.erase(it);
  }
  for (const auto& [name, s] : in_a) std::printf("%-24.24s only in A\n", name.c_str());
  for (const char* key : {"psnr", "psnr_pooled", "ssim", "psnr_nearest_input", "render_ms_per_view", "encode_s_total"})
    if (a.contains(key) && b.contains(key))
      std::printf("overall %-20s A %10.4f  B %10.4f  B-A %+10.4f\n", key, a[key].get<double>(), b[key].get<double>(),
                  b[key].get<double>() - a[key].get<double>());
}

}  // namespace lact::app
