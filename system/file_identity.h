// A file's content identity: "SIZE:HASH" (the byte count, then 16 hex digits of a fast 64-bit hash). Files up
// to 64 MiB are hashed whole; larger ones are sampled (their first MiB and 64 blocks of 64 KiB spread evenly to
// the end), which costs a few milliseconds on a 1.25 GB model. Two files with one identity are taken to be the
// same model or state: paths may differ (copies, other nodes), contents may not. An edit that falls only
// between the samples of a large file is not seen.
#pragma once

#include <cstdint>
#include <string>

namespace lact {

// The identity of `size` bytes at `data` (the whole of a file, e.g. as mapped).
std::string content_identity(const uint8_t* data, uint64_t size);

// The identity of the regular file at `path`, read with pread (no mapping). Throws Error naming the path.
std::string file_identity(const std::string& path);

}  // namespace lact
