// `lact model fetch NAME`: an official checkpoint downloaded from the hub (resumable, checked against the
// SHA-256 and size the hub reports), converted by the one converter and recorded in the cache folder
// (pipeline/model_cache.h), so that `--model NAME` opens it.
#pragma once

#include <string>

#include "pipeline/model_cache.h"

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

// Fetches, checks, converts and records; returns the record (the cached one when it is there already).
CachedModel fetch_official_model(const FetchOptions& options);

}  // namespace lact
