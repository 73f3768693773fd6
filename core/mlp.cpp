#include "core/config_fields.h"
#include "core/layers.h"

namespace lact {

void mlp(Backend& be, const ModuleConfig& config, const ModuleWeights& w, const Tensor& y, Tensor& out) {
  Tensor hidden = be.empty({y.dim(0), w.fc.dim(0)});
  linear(be, y, w.fc, hidden);
  be.gelu(hidden);
  linear(be, hidden, w.out_proj, out);
}

namespace {

// model.MLP: c_proj(GELU(c_fc(y))), token-wise.
class MlpModule final : public BlockModule {
 public:
  ModuleKind kind() const override { return ModuleKind::Mlp; }
  const char* class_name() const override { return "MLP"; }
  std::string describe(const ModelConfig& c, const ModuleConfig& m) const override {
    return "MLP, hidden " + std::to_string(m.hidden(c.dim));
  }
  void parse(const nlohmann::json& params, int, ModuleConfig& m, const std::string& where) const override {
    refuse_unknown_params(params, {"inter_multi", "bias"}, "MLP", where);
    m.inter_multi = optional_field<double>(params, "inter_multi", 4.0, where);
  }
  TensorList tensors(const ModelConfig& c, const ModuleConfig& m) const override {
    const int64_t dim = c.dim, hidden = m.hidden(c.dim);
    return {{"f.c_fc.weight", {hidden, dim}}, {"f.c_proj.weight", {dim, hidden}}};
  }
  void load(Backend&, const ModuleConfig&, const std::function<Tensor(const std::string&)>& get,
            ModuleWeights& w) const override {
    w.fc = get("f.c_fc.weight");
    w.out_proj = get("f.c_proj.weight");
  }
  ModuleState encode(const ModuleContext& ctx, const Tensor& y, Tensor& out, bool /*output_needed*/) const override {
    for_view_chunks(y.dim(0), 1, ctx.options.token_tile, [&](int64_t b, int64_t e) {
      Tensor o = out.slice(b, e);
      mlp(ctx.be, ctx.config, ctx.weights, y.slice(b, e), o);
    });
    return {};
  }
  void render(const ModuleContext& ctx, const ModuleState*, const Tensor& y, Tensor& out) const override {
    mlp(ctx.be, ctx.config, ctx.weights, y, out);
  }
  double encode_flops(const ModelConfig& c, const ModuleConfig& m, double n, double) const override {
    return 4.0 * n * c.dim * m.hidden(c.dim);
  }
  double render_flops(const ModelConfig& c, const ModuleConfig& m, double n, double) const override {
    return 4.0 * n * c.dim * m.hidden(c.dim);
  }
  double encode_scratch_floats(const ModelConfig& c, const ModuleConfig& m, const ModelOptions&, double, double,
                               double chunk) const override {
    return chunk * m.hidden(c.dim);
  }
};

}  // namespace

const BlockModule& mlp_module() {
  static const MlpModule module;
  return module;
}

}  // namespace lact
