#include "pipeline/model_cache.h"

#include <sys/stat.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/lpips.h"
#include "pipeline/official_models.h"
#include "system/error.h"
#include "system/file_io.h"

namespace lact {

namespace {

bool exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

std::string absolute_variable(const char* name) {
  const char* value = std::getenv(name);
  return value && value[0] == '/' ? value : "";
}

}  // namespace

std::string model_cache_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  const std::string xdg = absolute_variable("XDG_CACHE_HOME");
  if (!xdg.empty()) return xdg + "/lact";
  const std::string home = absolute_variable("HOME");
  if (!home.empty()) return home + "/.cache/lact";
  throw Error("HOME", "neither XDG_CACHE_HOME nor HOME is an absolute folder: give --cache-dir");
}

std::optional<CachedModel> cached_model(const std::string& dir, const std::string& name) {
  const std::string record = dir + "/" + name + ".json", model = dir + "/" + name + ".safetensors";
  if (!exists(record) || !exists(model)) return std::nullopt;
  CachedModel m;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_whole_file(record, 1 << 16));
    m.name = j.at("name").get<std::string>();
    m.kind = j.at("kind").get<std::string>();
    m.config = j.at("config").get<std::string>();
    m.source = j.at("source").get<std::string>();
    m.sha256 = j.at("sha256").get<std::string>();
    m.height = j.at("height").get<int>();
    m.width = j.at("width").get<int>();
    m.input_views = j.at("input_views").get<int>();
    m.bytes = j.at("bytes").get<uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(record,
                std::string("not a record lact model fetch wrote (") + e.what() + "): remove it and fetch again");
  }
  m.path = model;
  return m;
}

void record_cached_model(const std::string& dir, const CachedModel& m) {
  const nlohmann::json j = {
      {"name", m.name},     {"kind", m.kind},     {"config", m.config}, {"source", m.source},
      {"sha256", m.sha256}, {"height", m.height}, {"width", m.width},   {"input_views", m.input_views},
      {"bytes", m.bytes}};
  write_file_atomically(dir + "/" + m.name + ".json", j.dump(1) + "\n");
}

std::string resolve_model_argument(const std::string& text) {
  if (text.empty() || exists(text) || text.find('/') != std::string::npos || text.find('.') != std::string::npos)
    return text;
  const OfficialModel* official = find_official_model(text);
  const std::string dir = model_cache_dir();
  if (const std::optional<CachedModel> cached = cached_model(dir, text)) return cached->path;
  if (official)
    throw Error("--model", text + " is an official checkpoint that is not downloaded yet: run lact model fetch " +
                               text + " (into " + dir + ")");
  return text;
}

std::optional<std::string> cached_lpips_weights(const std::string& cache_dir_flag) {
  return cached_lpips_weights(LpipsNet::alex, cache_dir_flag);
}

std::optional<std::string> cached_lpips_weights(LpipsNet net, const std::string& cache_dir_flag) {
  try {
    const char* name = lpips_network(net).cache_name;
    if (std::optional<CachedModel> cached = cached_model(model_cache_dir(cache_dir_flag), name)) return cached->path;
  } catch (const Error&) {  // no cache folder to name, or a record lact did not write: not fetched
  }
  return std::nullopt;
}

std::string lpips_weights_of_net(LpipsNet net, const std::string& given) {
  const LpipsNetwork& wanted = lpips_network(net);
  if (!given.empty()) {
    const LpipsNetwork& held = lpips_network_of_file(given);
    if (&held != &wanted)
      throw Error("--lpips-net", std::string(wanted.flag_name) + ", but " + given + " holds LPIPS weights with " +
                                     held.name + " ('" + held.format + "'; --lpips-net " + held.flag_name +
                                     ", or leave it out: the file says its backbone)");
    return given;
  }
  if (std::optional<std::string> cached = cached_lpips_weights(net)) return *cached;
  throw Error("--lpips-net", std::string(wanted.flag_name) + ": no LPIPS weights with " + wanted.name +
                                 " are cached: `lact model fetch " + wanted.cache_name +
                                 "` fetches them (or --lpips FILE)");
}

}  // namespace lact
