// Downloading one file over HTTP(S) with libcurl, resumable and checked: what the server says of the file (its
// SHA-256 and size: Hugging Face's X-Linked-Etag / X-Linked-Size for an LFS file, else a SHA-256 ETag and the
// Content-Length), a download that continues a partial file with an HTTP Range request, and the SHA-256 of a
// file. Only http and https, at most 5 redirects; a transfer slower than 1 KB/s for a minute is stopped.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace lact {

struct RemoteFile {
  std::string sha256;  // lowercase hex, empty when the server names none
  uint64_t size = 0;   // 0 when unknown
};

// Asks the server (HEAD, redirects followed) what it holds at `url`. Error naming the URL when it cannot be
// reached or answers with an HTTP error.
RemoteFile remote_file(const std::string& url);

// Called about twice a second with the bytes on disk and the expected total (0: unknown).
using DownloadProgress = std::function<void(uint64_t done, uint64_t total)>;

// Downloads `url` into `part`, continuing from the bytes already there (a Range request; a server that answers
// with the whole file restarts it). Error naming the URL when it fails; `part` keeps what arrived.
void download_resuming(const std::string& url, const std::string& part, uint64_t total,
                       const DownloadProgress& progress);

// The SHA-256 of a file, lowercase hex.
std::string sha256_of_file(const std::string& path);

}  // namespace lact
