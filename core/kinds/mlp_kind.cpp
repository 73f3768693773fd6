// model.MLP: its params, tensors, FLOPs, scratch and products. The forward pass is core/mlp.cpp.
#include "core/kinds/mlp_kind.h"

#include "core/config_fields.h"
#include "core/kinds/kind_list.h"

namespace lact {

namespace {

class MlpKind final : public ModuleKind {
 public:
  const char* class_name() const override { return "MLP"; }
  std::shared_ptr<const ModuleParams> parse(const nlohmann::json& params, const std::string&, int dim,
                                            const std::string& where) const override {
    refuse_unknown_params(params, {"inter_multi", "bias"}, "MLP", where);
    auto p = std::make_shared<MlpParams>();
    p->inter_multi = optional_field<double>(params, "inter_multi", 4.0, where);
    check_inter_multi(p->inter_multi, p->hidden(dim), where);
    return p;
  }
  std::string describe(const ModelConfig& c, const ModuleConfig& m) const override {
    return "MLP, hidden " + std::to_string(hidden(m, c.dim));
  }
  int hidden(const ModuleConfig& m, int dim) const override { return m.params_as<MlpParams>().hidden(dim); }
  TensorList tensors(const ModelConfig& c, const ModuleConfig& m) const override {
    const int64_t dim = c.dim, inner = hidden(m, c.dim);
    return {{"f.c_fc.weight", {inner, dim}}, {"f.c_proj.weight", {dim, inner}}};
  }
  double encode_flops(const ModelConfig& c, const ModuleConfig& m, double n, double) const override {
    return 4.0 * n * c.dim * hidden(m, c.dim);
  }
  double render_flops(const ModelConfig& c, const ModuleConfig& m, double n, double) const override {
    return 4.0 * n * c.dim * hidden(m, c.dim);
  }
  double encode_scratch_floats(const ModelConfig& c, const ModuleConfig& m, const ModelOptions&, double, double,
                               double chunk) const override {
    return chunk * hidden(m, c.dim);
  }
  std::vector<GemmShape> gemm_shapes(const ModelConfig& c, const ModuleConfig& m, int64_t tokens,
                                     int64_t) const override {
    const int64_t d = c.dim, inner = hidden(m, c.dim);
    return {{"MLP up", tokens, inner, d, 1, true}, {"MLP down", tokens, d, inner, 1, true}};
  }
};

}  // namespace

const ModuleKind& mlp_kind() {
  static const MlpKind kind;
  return kind;
}

}  // namespace lact
