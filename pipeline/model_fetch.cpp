#include "pipeline/model_fetch.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "pipeline/model_convert.h"
#include "pipeline/model_download.h"
#include "pipeline/official_models.h"
#include "system/error.h"
#include "system/terminal_text.h"

namespace lact {

namespace {

bool exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

// On a terminal, one line redrawn in place: bytes, percent, rate and time left.
DownloadProgress progress_bar(const std::string& name, bool quiet) {
  if (quiet || !::isatty(STDERR_FILENO)) return {};
  const auto start = std::chrono::steady_clock::now();
  return [name, start, first = uint64_t(-1)](uint64_t done, uint64_t total) mutable {
    if (first == uint64_t(-1)) first = done;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = seconds > 0 ? (done - first) / seconds : 0;
    char eta[32] = "";
    if (rate > 0 && total > done) std::snprintf(eta, sizeof eta, ", %.0f s left", (total - done) / rate);
    std::fprintf(stderr, "\r\033[Klact model fetch: %s %s of %s (%.0f%%), %.1f MB/s%s", name.c_str(),
                 size_text(done).c_str(), total ? size_text(total).c_str() : "?", total ? 100.0 * done / total : 0.0,
                 rate / 1e6, eta);
    if (total && done >= total) std::fputc('\n', stderr);
    std::fflush(stderr);
  };
}

// The download checked against what the hub said: its size, then its SHA-256. A file that fails is removed
// (resuming it could never succeed), and the line says so.
void check_download(const std::string& path, const RemoteFile& remote, const std::string& url) {
  struct stat info;
  const uint64_t size = ::stat(path.c_str(), &info) == 0 ? static_cast<uint64_t>(info.st_size) : 0;
  std::string problem;
  if (remote.size && size != remote.size)
    problem = std::to_string(size) + " bytes where the hub reports " + std::to_string(remote.size);
  const std::string sha = problem.empty() && !remote.sha256.empty() ? sha256_of_file(path) : "";
  if (!sha.empty() && sha != remote.sha256) problem = "SHA-256 " + sha + " where the hub reports " + remote.sha256;
  if (problem.empty()) return;
  std::remove(path.c_str());
  throw Error(url, "the download does not match: " + problem + " (removed it; fetch again)");
}

std::string download_checked(const OfficialModel& m, const std::string& dir, const std::string& url,
                             const FetchOptions& o, RemoteFile& remote) {
  remote = remote_file(url);
  if (remote.sha256.empty())
    throw Error(url,
                "the hub reports no SHA-256 for it (an X-Linked-Etag or ETag header): refusing an "
                "unchecked download");
  return download_into(url, dir + "/" + m.name + ".pt", remote, m.name, o.quiet);
}

}  // namespace

std::string hub_url(const std::string& flag) {
  const char* env = std::getenv("LACT_HUB");
  const std::string hub = !flag.empty() ? flag : env && *env ? env : kDefaultHub;
  const size_t host = hub.compare(0, 7, "http://") == 0 ? 7 : hub.compare(0, 8, "https://") == 0 ? 8 : 0;
  // A host must follow: "http://" or "http:///x" joined to the file's path became "http:/airsplay/..." for curl.
  if (host == 0 || host >= hub.size() || hub[host] == '/')
    throw Error(flag.empty() ? "LACT_HUB" : "--hub",
                "'" + hub.substr(0, 80) + "' is not an http:// or https:// URL with a host");
  return hub;
}

std::string download_into(const std::string& url, const std::string& path, const RemoteFile& remote,
                          const std::string& label, bool quiet) {
  const std::string part = path + ".part";
  if (exists(path) && !remote.sha256.empty() && sha256_of_file(path) == remote.sha256)
    return path;  // a conversion failed after the download
  download_resuming(url, part, remote.size, progress_bar(label, quiet));
  check_download(part, remote, url);
  std::filesystem::rename(part, path);
  return path;
}

CachedModel fetch_official_model(const FetchOptions& o) {
  const OfficialModel* m = find_official_model(o.name);
  if (!m) throw Error(o.name, "not an official checkpoint (lact model list names them)");
  const std::string dir = model_cache_dir(o.cache_dir), url = official_model_url(hub_url(o.hub), m->name);
  if (!o.force)
    if (std::optional<CachedModel> cached = cached_model(dir, m->name)) return *cached;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw Error(dir, "cannot make the cache folder: " + error.message());
  RemoteFile remote;
  const std::string pt = download_checked(*m, dir, url, o, remote);
  const char* env_config = std::getenv("LACT_HUB_CONFIG");
  const std::string config = !o.config.empty() ? o.config : env_config ? env_config : "";
  const std::string summary = convert_checkpoint(pt, config, dir + "/" + m->name + ".safetensors");
  if (!o.quiet) std::fprintf(stderr, "lact model fetch: %s\n", terminal_text(summary).c_str());
  CachedModel record{m->name,
                     dir + "/" + m->name + ".safetensors",
                     m->kind,
                     config.empty() ? m->config : config,
                     url,
                     remote.sha256,
                     m->height,
                     m->width,
                     m->input_views,
                     remote.size};
  record_cached_model(dir, record);
  std::remove(pt.c_str());  // the converted file is what lact reads; the .pt would keep 1.2-1.6 GB more
  return record;
}

}  // namespace lact
