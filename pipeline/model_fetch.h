// `lact model fetch NAME`: an official checkpoint downloaded from the hub (resumable, checked against the
// SHA-256 and size the hub reports), converted by the one converter and recorded in the cache folder
// (pipeline/model_cache.h), so that `--model NAME` opens it.
#pragma once

#include <string>

#include "pipeline/model_cache.h"
#include "pipeline/model_download.h"

namespace lact {

struct FetchOptions {
  std::string name;
  std::string cache_dir;  // empty: model_cache_dir()'s default
  std::string hub;        // empty: $LACT_HUB, else https://huggingface.co
  std::string config;     // empty: $LACT_HUB_CONFIG, else the official one (a mirror's own weights need theirs)
  bool force = false;     // fetch and convert again although it is cached
  bool quiet = false;     // no progress bar
};

// The hub to use: `flag`, else $LACT_HUB, else kDefaultHub; Error naming it unless it is an http(s) URL.
std::string hub_url(const std::string& flag);

// Downloads `url` into `path` (resuming `path`.part), checked against `remote`'s size and SHA-256 where it names
// them; a file that fails is removed and the Error says so. A progress bar on a terminal unless `quiet`.
std::string download_into(const std::string& url, const std::string& path, const RemoteFile& remote,
                          const std::string& label, bool quiet);

// Fetches, checks, converts and records; returns the record (the cached one when it is there already).
CachedModel fetch_official_model(const FetchOptions& options);

}  // namespace lact
