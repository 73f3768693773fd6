#include "kernels/backend.h"

#include <cstring>
#include <stdexcept>

namespace lact {

Tensor Backend::zeros(const Shape& shape) {
  Tensor t = empty(shape);
  fill(t, 0.0f);
  return t;
}

Tensor Backend::from_host(const Shape& shape, const float* host) {
  Tensor t = empty(shape);
  upload(t, host);
  return t;
}

std::vector<float> Backend::to_host(const Tensor& t) {
  std::vector<float> host(static_cast<size_t>(t.numel()));
  download(t, host.data());
  return host;
}

void Backend::replay(const Recording&) { throw std::logic_error("replay: the " + name() + " backend does not record"); }

RecordingScope::~RecordingScope() {
  if (active_) backend_.end_recording();  // an op threw while recording: drop the capture, release the lock
}

std::unique_ptr<Recording> RecordingScope::finish() {
  if (!active_) throw std::logic_error("RecordingScope::finish: not recording");
  active_ = false;
  return backend_.end_recording();
}

std::vector<float> pack_poses(const std::vector<RayPose>& poses) {
  std::vector<float> packed(poses.size() * static_cast<size_t>(kRayPoseFloats));
  if (!poses.empty()) std::memcpy(packed.data(), poses.data(), poses.size() * sizeof(RayPose));
  return packed;
}

namespace {
// y = x W^T + beta y.
void linear_product(Backend& be, const Tensor& x, const Tensor& weight, Tensor& y, float beta) {
  const int64_t out = weight.dim(0), in = weight.dim(1);
  const int64_t rows = x.numel() / in;
  if (x.numel() != rows * in || y.numel() != rows * out)
    throw std::invalid_argument("linear: x " + shape_string(x.shape()) + ", weight " + shape_string(weight.shape()) +
                                ", y " + shape_string(y.shape()));
  if (x.dtype() != DType::F32 || y.dtype() != DType::F32) {
    Tensor y2 = y.reshape({rows, out});
    return be.linear_bf16(x.reshape({rows, in}), weight, y2, beta);
  }
  be.gemm(false, true, rows, out, in, 1.0f, {x.data(), in, 0}, {weight.data(), in, 0}, beta, y.data(), out, 0, 1);
}
}  // namespace

void linear(Backend& be, const Tensor& x, const Tensor& weight, Tensor& y) { linear_product(be, x, weight, y, 0.0f); }

void linear_add(Backend& be, const Tensor& x, const Tensor& weight, Tensor& y) {
  linear_product(be, x, weight, y, 1.0f);
}

namespace {
struct MatrixDims {
  int64_t batch, rows, cols, stride;
};
MatrixDims matrix_dims(const Tensor& t) {
  if (t.rank() == 2) return {1, t.dim(0), t.dim(1), 0};
  if (t.rank() == 3) return {t.dim(0), t.dim(1), t.dim(2), t.dim(1) * t.dim(2)};
  throw std::invalid_argument("matmul: operand of shape " + shape_string(t.shape()) + " is not 2-D or 3-D");
}
}  // namespace

void matmul(Backend& be, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& c, float alpha,
            float beta) {
  const MatrixDims da = matrix_dims(a), db = matrix_dims(b), dc = matrix_dims(c);
  const int64_t m = transpose_a ? da.cols : da.rows, ka = transpose_a ? da.rows : da.cols;
  const int64_t kb = transpose_b ? db.cols : db.rows, n = transpose_b ? db.rows : db.cols;
  const int64_t batch = dc.batch;
  const bool batch_ok = (da.batch == batch || a.rank() == 2) && (db.batch == batch || b.rank() == 2);
  if (ka != kb || dc.rows != m || dc.cols != n || !batch_ok)
    throw std::invalid_argument("matmul: shapes " + shape_string(a.shape()) + (transpose_a ? "^T" : "") + " x " +
                                shape_string(b.shape()) + (transpose_b ? "^T" : "") + " -> " + shape_string(c.shape()));
  be.gemm(transpose_a, transpose_b, m, n, ka, alpha, {a.data(), da.cols, da.stride}, {b.data(), db.cols, db.stride},
          beta, c.data(), dc.cols, dc.stride, batch);
}

std::string precision_name(Precision p) {
  switch (p) {
    case Precision::Fp32:
      return "fp32";
    case Precision::Tf32:
      return "tf32";
    case Precision::Bf16:
      return "bf16";
  }
  return "?";
}

Precision parse_precision(const std::string& name) {
  for (Precision p : {Precision::Fp32, Precision::Tf32, Precision::Bf16})
    if (precision_name(p) == name) return p;
  throw std::invalid_argument("unknown precision '" + name + "' (fp32, tf32 or bf16)");
}

}  // namespace lact
