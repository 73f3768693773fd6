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

// Each network's published files: torchvision's backbone (the SHA-256 prefix its name carries) and the linear layers.
struct PublishedFiles {
  const char* backbone_file;
  const char* sha256_prefix;
  const char* linear_file;  // in lpips/weights/v0.1/
};
constexpr PublishedFiles kAlexNetFiles{"alexnet-owt-7be5be79.pth", "7be5be79", "alex.pth"};
constexpr PublishedFiles kVgg16Files{"vgg16-397923af.pth", "397923af", "vgg.pth"};
constexpr const char* kLinearFolder = "/richzhang/PerceptualSimilarity/raw/master/lpips/weights/v0.1/";

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

std::vector<LpipsDownload> lpips_downloads(const std::string& hub, LpipsNet net) {
  const std::string root = strip_trailing_slash(hub);
  const PublishedFiles& files = net == LpipsNet::vgg ? kVgg16Files : kAlexNetFiles;
  return {{(root.empty() ? "https://download.pytorch.org" : root) + "/models/" + files.backbone_file,
           files.backbone_file, files.sha256_prefix},
          {(root.empty() ? "https://github.com" : root) + kLinearFolder + files.linear_file,
           std::string("lpips-v0.1-") + files.linear_file, ""}};
}

std::optional<LpipsNet> lpips_fetch_name(const std::string& name) {
  for (const LpipsNetwork* n : {&kLpipsAlexNet, &kLpipsVgg16})
    if (name == n->cache_name) return n->net;
  return std::nullopt;
}

CachedModel fetch_lpips_weights(const FetchOptions& o, LpipsNet net) {
  const LpipsNetwork& network = lpips_network(net);
  const std::string dir = model_cache_dir(o.cache_dir);
  if (!o.force)
    if (std::optional<CachedModel> cached = cached_model(dir, network.cache_name)) return *cached;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw Error(dir, "cannot make the cache folder: " + error.message());
  const std::vector<LpipsDownload> downloads = lpips_downloads(mirror(o.hub), net);
  std::string backbone_sha, linear_sha;
  const std::string backbone = download_lpips_file(downloads[0], dir, o, backbone_sha);
  const std::string linear = download_lpips_file(downloads[1], dir, o, linear_sha);
  const std::string output = dir + "/" + network.cache_name + ".safetensors";
  const std::string summary = convert_lpips_weights(backbone, linear, output);
  if (!o.quiet) std::fprintf(stderr, "lact model fetch: %s\n", terminal_text(summary).c_str());
  CachedModel record;
  record.name = network.cache_name;
  record.path = output;
  record.kind = "metric";
  record.config = network.format;
  record.source = downloads[0].url + " " + downloads[1].url;
  record.sha256 = backbone_sha + " " + linear_sha;
  record.bytes = std::filesystem::file_size(backbone) + std::filesystem::file_size(linear);
  record_cached_model(dir, record);
  std::remove(backbone.c_str());  // the converted file holds what LPIPS uses (the classifier is not kept)
  std::remove(linear.c_str());
  return record;
}

}  // namespace lact
