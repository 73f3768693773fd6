// model.MLP's layer and forward pass (its description: core/kinds/mlp_kind.cpp).
#include "core/kinds/kind_list.h"
#include "core/layers.h"

namespace lact {

// The hidden layer is the backend's activation type (bf16 on CUDA at bf16; GELU computes in float32 either way).
void mlp(Backend& be, const MlpWeights& w, const Tensor& y, Tensor& out) {
  Tensor hidden = be.empty({y.dim(0), w.fc.dim(0)}, be.activation_type());
  linear(be, y, w.fc, hidden);
  be.gelu(hidden);
  linear_add(be, hidden, w.out_proj, out);
}

namespace {

// c_proj(GELU(c_fc(y))), token-wise.
class MlpModule final : public BlockModule {
 public:
  const ModuleKind& kind() const override { return mlp_kind(); }
  std::shared_ptr<const KindWeights> load(Backend&, const ModuleConfig&,
                                          const std::function<Tensor(const std::string&)>& get) const override {
    auto w = std::make_shared<MlpWeights>();
    w->fc = get("f.c_fc.weight");
    w->out_proj = get("f.c_proj.weight");
    return w;
  }
  DType input_type(const Backend& be) const override { return be.activation_type(); }  // read by a product
  ModuleState encode(const ModuleContext& ctx, const Tensor& y, Tensor& out, bool /*output_needed*/) const override {
    const auto& w = ctx.weights.as<MlpWeights>();
    for_view_chunks(y.dim(0), 1, ctx.options.token_tile, [&](int64_t b, int64_t e) {
      Tensor o = out.slice(b, e);
      mlp(ctx.be, w, y.slice(b, e), o);
    });
    return {};
  }
  void render(const ModuleContext& ctx, const ModuleState*, const Tensor& y, Tensor& out) const override {
    mlp(ctx.be, ctx.weights.as<MlpWeights>(), y, out);
  }
};

}  // namespace

const BlockModule& mlp_module() {
  static const MlpModule module;
  return module;
}

}  // namespace lact
