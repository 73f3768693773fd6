// The TTT variants as the authors' ablation code defines them: one file per ttt_loss_type in
// JunchenLiu77/LaCT (branch ablation) lact_nvs/_lact_ttt/. Each differs from the baseline in which weights
// update, whether phi is the SwiGLU hidden layer or the identity, whether the per-token rate multiplies,
// and whether weight norm and Newton-Schulz run.
#include <map>

#include "core/config.h"
#include "system/error.h"

namespace lact {

namespace {

struct KnownVariant {
  const char* key;
  const char* preset;  // the paper's name, "" for the authors' other ablations
  bool only_w1, straight_qk, lr1, weight_norm, muon;
};

constexpr KnownVariant kVariants[] = {
    {"dot_product", "baseline", false, false, true, true, true},
    {"only_w1", "v1", true, false, true, true, true},
    {"only_w1_no_wn", "v2", true, false, true, false, true},
    {"only_w1_straight_qk", "", true, true, true, true, true},
    {"only_w1_straight_qk_no_wn", "v3", true, true, true, false, true},
    {"only_w1_straight_qk_no_lr1", "", true, true, false, true, true},
    {"only_w1_straight_qk_no_lr1_no_wn", "v4", true, true, false, false, true},
    {"only_w1_straight_qk_no_lr1_no_muon", "", true, true, false, true, false},
    {"only_w1_straight_qk_no_lr1_no_wn_muon", "v6", true, true, false, false, false},
};

std::string known_keys() {
  std::string list;
  for (const KnownVariant& v : kVariants) list += (list.empty() ? "" : ", ") + std::string(v.key);
  return list;
}

}  // namespace

std::string TttVariant::label() const {
  for (const KnownVariant& v : kVariants)
    if (key == v.key && *v.preset) return v.preset;
  return key;
}

std::string ttt_variant_key(const std::string& name) {
  for (const KnownVariant& v : kVariants)
    if (name == v.preset || name == v.key) return v.key;
  if (name == "v5") throw Error(name, "V5 removes momentum, which the NVS code never had: for NVS it is v4");
  throw Error(name,
              "unknown TTT variant (presets: baseline, v1, v2, v3, v4, v6; the authors' keys: " + known_keys() + ")");
}

TttVariant ttt_variant_from_key(const std::string& key, const std::string& where) {
  for (const KnownVariant& v : kVariants)
    if (key == v.key) return {v.key, v.only_w1, v.straight_qk, v.lr1, v.weight_norm, v.muon};
  static const std::map<std::string, std::string> kNotImplemented = {{"ga_dot_product", "gradient ascent"},
                                                                     {"mse", "the MSE inner loss"},
                                                                     {"design1", "the q/k mixed update"},
                                                                     {"design2", "the q/k mixed update"}};
  auto it = kNotImplemented.find(key);
  if (it != kNotImplemented.end())
    throw Error(where, "ttt_loss_type '" + key + "' (" + it->second +
                           ") is not implemented in lact (implemented: " + known_keys() + ")");
  throw Error(where, "ttt_loss_type '" + key.substr(0, 60) +
                         "' is not a variant of the authors' code (known: " + known_keys() + ")");
}

}  // namespace lact
