#include "pipeline/lpips_fetch.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/lpips.h"
#include "pipeline/model_convert.h"
#include "system/error.h"
#include "system/terminal_text.h"

namespace lact {

namespace {

constexpr const char* kAlexnetPath = "/models/alexnet-owt-7be5be79.pth";
constexpr const char* kLinearPath = "/richzhang/PerceptualSimilarity/raw/master/lpips/weights/v0.1/alex.pth";

// The mirror asked for: the flag, else $LACT_HUB, else none (the publishers).
std::string mirror(const std::string& flag) {
  const char* env = std::getenv("LACT_HUB");
  const std::string hub = !flag.empty() ? flag : env && *env ? env : "";
  if (!hub.empty()) return hub_url(hub);  // checks it is an http(s) URL
  return "";
}

std::string strip_trailing_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

// Downloads one file into `dir`, checked against the size and SHA-256 the server states, else (no SHA-256 stated,
// as the publishers state none) against the SHA-256 prefix its published name carries.
std::string download_lpips_file(const LpipsDownload& d, const std::string& dir, const FetchOptions& o,
                                std::string& sha256) {
  RemoteFile remote = remote_file(d.url);
  const std::string path = download_into(d.url, dir + "/" + d.file, remote, d.file, o.quiet);
  sha256 = sha256_of_file(path);
  if (remote.sha256.empty() && sha256.compare(0, d.sha256_prefix.size(), d.sha256_prefix) != 0) {
    std::remove(path.c_str());
    throw Error(d.url, "the download does not match: SHA-256 " + sha256 + " does not start with " + d.sha256_prefix +
                           ", as its published name says (removed it; fetch again)");
  }
  return path;
}

}  // namespace

std::vector<LpipsDownload> lpips_downloads(const std::string& hub) {
  const std::string root = strip_trailing_slash(hub);
  return {
      {(root.empty() ? "https://download.pytorch.org" : root) + kAlexnetPath, "alexnet-owt-7be5be79.pth", "7be5be79"},
      {(root.empty() ? "https://github.com" : root) + kLinearPath, "lpips-v0.1-alex.pth", ""}};
}

CachedModel fetch_lpips_weights(const FetchOptions& o) {
  const std::string dir = model_cache_dir(o.cache_dir);
  if (!o.force)
    if (std::optional<CachedModel> cached = cached_model(dir, kLpipsCacheName)) return *cached;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw Error(dir, "cannot make the cache folder: " + error.message());
  const std::vector<LpipsDownload> downloads = lpips_downloads(mirror(o.hub));
  std::string alexnet_sha, linear_sha;
  const std::string alexnet = download_lpips_file(downloads[0], dir, o, alexnet_sha);
  const std::string linear = download_lpips_file(downloads[1], dir, o, linear_sha);
  const std::string output = dir + "/" + kLpipsCacheName + ".safetensors";
  const std::string summary = convert_lpips_weights(alexnet, linear, output);
  if (!o.quiet) std::fprintf(stderr, "lact model fetch: %s\n", terminal_text(summary).c_str());
  CachedModel record;
  record.name = kLpipsCacheName;
  record.path = output;
  record.kind = "metric";
  record.config = kLpipsFormat;
  record.source = downloads[0].url + " " + downloads[1].url;
  record.sha256 = alexnet_sha + " " + linear_sha;
  record.bytes = std::filesystem::file_size(alexnet) + std::filesystem::file_size(linear);
  record_cached_model(dir, record);
  std::remove(alexnet.c_str());  // the converted file holds what LPIPS uses (AlexNet's classifier is not kept)
  std::remove(linear.c_str());
  return record;
}

}  // namespace lact
