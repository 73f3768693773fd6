// Fuzz target: a model or scene-state file (safetensors: header JSON, metadata config, tensor data), read as
// `lact info` and the model loader read it: the header and its checks, the config in the metadata, every
// tensor converted to float. lact::Error is the only acceptable failure.
#include "core/config.h"
#include "core/safetensors.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const lact_fuzz::fs::path file = lact_fuzz::work_dir() / "model.safetensors";
  static const bool cleanup = (std::atexit(lact_fuzz::remove_work_dir), true);
  (void)cleanup;
  lact_fuzz::write_file(file, data, size);
  lact_fuzz::expect_only_lact_errors([&] {
    const lact::SafetensorsFile st(file.string());
    for (const auto& [name, entry] : st.entries()) {
      if (entry.end > size || entry.end < entry.begin) __builtin_trap();  // the reader checked the offsets
      try {
        const std::vector<float> values = st.read_floats(name);
        if (values.size() * (entry.dtype == "F32" ? 4 : 2) != entry.end - entry.begin) __builtin_trap();
      } catch (const lact::Error&) {
      }
    }
    const lact::ModelConfig config = lact::config_from_metadata(st);
    if (config.layers < 1 || config.layers > lact::ConfigLimits::kMaxLayers || config.block.empty()) __builtin_trap();
    for (const lact::ModuleConfig& m : config.block)
      if (m.heads(config.dim) < 0 || m.hidden(config.dim) <= 0) __builtin_trap();
    (void)config.state_floats_per_layer(0);
  });
  return 0;
}
