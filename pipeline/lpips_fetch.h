// `lact model fetch lpips` (AlexNet) and `lact model fetch lpips-vgg` (VGG16): the LPIPS metric's two published
// files, torchvision's backbone (download.pytorch.org/models/alexnet-owt-7be5be79.pth or vgg16-397923af.pth,
// checked against the SHA-256 prefix its name carries, as torchvision checks it) and the lpips package's v0.1
// linear layers (github.com/richzhang/PerceptualSimilarity, lpips/weights/v0.1/alex.pth or vgg.pth, for which no
// checksum is published: their shapes are checked by the conversion), downloaded resumably into the model cache
// (a server that states a SHA-256, as a Hugging Face mirror does, is checked against it instead), converted into
// one lpips.safetensors (lpips-vgg.safetensors) and recorded as "lpips" ("lpips-vgg").
// A mirror (--hub, $LACT_HUB) holds them under their URL paths: HUB/models/alexnet-owt-7be5be79.pth and
// HUB/richzhang/PerceptualSimilarity/raw/master/lpips/weights/v0.1/alex.pth (likewise vgg16-397923af.pth, vgg.pth).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/lpips_network.h"
#include "pipeline/model_fetch.h"

namespace lact {

struct LpipsDownload {
  std::string url, file;      // where from, and the file name it keeps in the cache while converting
  std::string sha256_prefix;  // the leading hex digits its SHA-256 must have (empty: none published)
};

// The two downloads of `net`'s weights: from `hub` (a mirror's root URL) when it is not empty, else from their
// publishers.
std::vector<LpipsDownload> lpips_downloads(const std::string& hub, LpipsNet net = LpipsNet::alex);

// Downloads, checks, converts and records; the cached record when it is there already (unless options.force).
CachedModel fetch_lpips_weights(const FetchOptions& options, LpipsNet net = LpipsNet::alex);

// The network whose weights `lact model fetch NAME` fetches (lpips, lpips-vgg); nothing for another name.
std::optional<LpipsNet> lpips_fetch_name(const std::string& name);

}  // namespace lact
