// Where `lact model fetch` keeps the official checkpoints it converted, and what it recorded of each: the cache
// folder ($XDG_CACHE_HOME/lact, else ~/.cache/lact, or --cache-dir) holds NAME.safetensors (the converted
// model) and NAME.json (its record: kind, training size, input views, config, the download's SHA-256 and size,
// where it came from). A `--model` argument that is a cached name stands for its NAME.safetensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/lpips_network.h"

namespace lact {

struct CachedModel {
  std::string name, path;  // path: the converted NAME.safetensors
  std::string kind, config, source, sha256;
  int height = 0, width = 0, input_views = 0;
  uint64_t bytes = 0;  // the downloaded .pt
};

// The cache folder: `flag` when given, else $XDG_CACHE_HOME/lact (an absolute XDG_CACHE_HOME), else
// $HOME/.cache/lact. Error naming the variable when neither gives an absolute folder.
std::string model_cache_dir(const std::string& flag = "");

// The record of `name` in `dir` when both its record and its converted file are there; Error naming the record
// when it is not a record lact wrote (bad JSON, a field of the wrong type).
std::optional<CachedModel> cached_model(const std::string& dir, const std::string& name);
// Writes NAME.json atomically.
void record_cached_model(const std::string& dir, const CachedModel& model);

// The LPIPS weights `lact model fetch lpips` (AlexNet) or `lact model fetch lpips-vgg` (VGG16) records
// (pipeline/lpips_fetch.h): the cache's lpips.safetensors or lpips-vgg.safetensors, or nothing when they were not
// fetched (or the cache folder cannot be named).
inline constexpr const char* kLpipsCacheName = kLpipsAlexNet.cache_name;
std::optional<std::string> cached_lpips_weights(const std::string& cache_dir_flag = "");
std::optional<std::string> cached_lpips_weights(LpipsNet net, const std::string& cache_dir_flag = "");
// The LPIPS weights `--lpips-net NET` asks for: `given` (--lpips FILE) when not empty, Error naming --lpips-net
// when it holds another backbone's weights; else the cached ones, Error naming --lpips-net when they are not.
std::string lpips_weights_of_net(LpipsNet net, const std::string& given);

// What `--model TEXT` opens: TEXT itself when it names a file or looks like a path (a '/' or a file suffix);
// a cached official name's NAME.safetensors; Error("--model", "... lact model fetch NAME") for an official
// name that is not cached yet; else TEXT (opening it names what is missing).
std::string resolve_model_argument(const std::string& text);

}  // namespace lact
