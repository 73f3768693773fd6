#include "pipeline/model_download.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "system/error.h"

namespace lact {

namespace {

struct CurlHandle {
  CURL* curl;
  CurlHandle() : curl(curl_easy_init()) {
    if (!curl) throw Error("libcurl", "cannot start a transfer");
  }
  ~CurlHandle() { curl_easy_cleanup(curl); }
};

// The settings every request shares: the protocols, redirects and the stall limit.
void common_settings(CURL* curl, const std::string& url, char* error_text) {
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 30L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1000L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "lact/0.1.0");
}

void check_result(CURL* curl, CURLcode code, const char* error_text, const std::string& url, bool allow_416) {
  if (code != CURLE_OK) throw Error(url, std::string(error_text[0] ? error_text : curl_easy_strerror(code)));
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 400 && !(allow_416 && status == 416))
    throw Error(url, "HTTP " + std::to_string(status) +
                         (status == 404 ? " (no such file on this hub: check --hub or LACT_HUB)" : ""));
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool is_sha256(const std::string& text) {
  return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// A header line's value when its name is `name` (case-insensitive), quotes and a weak "W/" prefix removed.
bool header_value(const std::string& line, const std::string& name, std::string& value) {
  if (line.size() <= name.size() || lower(line.substr(0, name.size() + 1)) != name + ":") return false;
  value = line.substr(name.size() + 1);
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '"'; };
  if (value.compare(0, 3, " W/") == 0) value.erase(0, 3);
  while (!value.empty() && blank(value.front())) value.erase(0, 1);
  while (!value.empty() && blank(value.back())) value.pop_back();
  return true;
}

// The facts over the redirect chain: Hugging Face names an LFS file's SHA-256 and size in the first answer
// (X-Linked-*), the storage it redirects to in its own ETag and Content-Length.
struct HeaderFacts {
  std::string linked_etag, etag, linked_size, length;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& facts = *static_cast<HeaderFacts*>(user);
  const std::string line(data, size * count);
  std::string value;
  if (header_value(line, "x-linked-etag", value)) facts.linked_etag = lower(value);
  if (header_value(line, "etag", value)) facts.etag = lower(value);
  if (header_value(line, "x-linked-size", value)) facts.linked_size = value;
  if (header_value(line, "content-length", value)) facts.length = value;
  return size * count;
}

uint64_t file_size(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 ? static_cast<uint64_t>(info.st_size) : 0;
}

uint64_t number(const std::string& text) {
  return !text.empty() && text.size() < 20 && text.find_first_not_of("0123456789") == std::string::npos
             ? std::stoull(text)
             : 0;
}

}  // namespace

RemoteFile remote_file(const std::string& url) {
  CurlHandle handle;
  char error_text[CURL_ERROR_SIZE] = "";
  HeaderFacts facts;
  common_settings(handle.curl, url, error_text);
  curl_easy_setopt(handle.curl, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(handle.curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(handle.curl, CURLOPT_HEADERDATA, &facts);
  check_result(handle.curl, curl_easy_perform(handle.curl), error_text, url, false);
  RemoteFile remote;
  remote.sha256 = is_sha256(facts.linked_etag) ? facts.linked_etag : is_sha256(facts.etag) ? facts.etag : "";
  remote.size = number(facts.linked_size) ? number(facts.linked_size) : number(facts.length);
  return remote;
}

namespace {

struct Transfer {
  CURL* curl = nullptr;
  FILE* file = nullptr;
  uint64_t offset = 0, total = 0;
  bool started = false;
  const DownloadProgress* progress = nullptr;
  std::chrono::steady_clock::time_point last{};
  std::string failure;
};

size_t on_data(char* data, size_t size, size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  if (!t.started) {
    t.started = true;
    long status = 0;
    curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &status);
    // A server that ignores the Range sends the whole file: start it again rather than append it.
    if (status == 200 && t.offset > 0) {
      if (std::fflush(t.file) != 0 || ::ftruncate(::fileno(t.file), 0) != 0 || std::fseek(t.file, 0, SEEK_SET) != 0)
        return t.failure = std::strerror(errno), 0;
      t.offset = 0;
    }
  }
  if (std::fwrite(data, size, count, t.file) != count) return t.failure = std::strerror(errno), 0;
  return size * count;
}

int on_progress(void* user, curl_off_t, curl_off_t now, curl_off_t, curl_off_t) {
  auto& t = *static_cast<Transfer*>(user);
  const auto time = std::chrono::steady_clock::now();
  if (*t.progress && time - t.last > std::chrono::milliseconds(500)) {
    t.last = time;
    (*t.progress)(t.offset + static_cast<uint64_t>(now), t.total);
  }
  return 0;
}

}  // namespace

void download_resuming(const std::string& url, const std::string& part, uint64_t total,
                       const DownloadProgress& progress) {
  Transfer t;
  t.offset = file_size(part);
  t.total = total;
  t.progress = &progress;
  if (total > 0 && t.offset == total) return;       // a previous run got every byte
  if (total > 0 && t.offset > total) t.offset = 0;  // not this file: start again
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(part.c_str(), t.offset > 0 ? "ab" : "wb"), std::fclose);
  if (!file) throw Error(part, std::string("cannot write: ") + std::strerror(errno));
  CurlHandle handle;
  char error_text[CURL_ERROR_SIZE] = "";
  t.curl = handle.curl;
  t.file = file.get();
  common_settings(handle.curl, url, error_text);
  if (t.offset > 0) curl_easy_setopt(handle.curl, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(t.offset));
  curl_easy_setopt(handle.curl, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(handle.curl, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(handle.curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(handle.curl, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(handle.curl, CURLOPT_NOPROGRESS, 0L);
  const CURLcode code = curl_easy_perform(handle.curl);
  if (!t.failure.empty()) throw Error(part, "cannot write: " + t.failure);
  check_result(handle.curl, code, error_text, url, false);
  if (std::fflush(file.get()) != 0 || ::fsync(::fileno(file.get())) != 0)
    throw Error(part, std::string("cannot write: ") + std::strerror(errno));
  if (progress) progress(file_size(part), total);
}

std::string sha256_of_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) throw Error(path, std::string("cannot read: ") + std::strerror(errno));
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1) throw Error("OpenSSL", "no SHA-256");
  std::vector<unsigned char> buffer(1 << 20);
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), file.get())) > 0)
    EVP_DigestUpdate(context.get(), buffer.data(), n);
  if (std::ferror(file.get())) throw Error(path, "cannot read");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context.get(), digest, &length);
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < length; ++i) std::snprintf(byte, sizeof byte, "%02x", digest[i]), hex += byte;
  return hex;
}

}  // namespace lact
