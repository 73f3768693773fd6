// One pixel of the input tokens (see core/tokens.h for the layout): the ray through the pixel centre and its
// colour, as 12 channels [o, d, o x d, rgb*2-1]. Shared by the CPU backend and the CUDA kernel (plain
// arithmetic, host and device), and checked against core/tokens.cpp's build_tokens, written separately.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define LACT_HOST_DEVICE __host__ __device__
#else
#define LACT_HOST_DEVICE
#endif

namespace lact {

// A pinhole camera in pixels and rows 0-2 of its camera-to-world matrix (OpenCV axes).
struct RayPose {
  float fx, fy, cx, cy;  // float, as lact::Camera holds them: the pixel-centre offsets below are float arithmetic
  double c2w[12];
};

// Index of pixel (u, v) of `view` in the token tensor [views * (H/p)(W/p), p*p*12], channel 0.
LACT_HOST_DEVICE inline int64_t ray_token_offset(int64_t view, int u, int v, int height, int width, int patch) {
  const int64_t cols = width / patch, per_view = static_cast<int64_t>(height / patch) * cols;
  const int64_t token = view * per_view + static_cast<int64_t>(v / patch) * cols + u / patch;
  return token * (static_cast<int64_t>(patch) * patch * 12) +
         static_cast<int64_t>((v % patch) * patch + u % patch) * 12;
}

// Writes the 12 channels of pixel (u, v); `rgb` null (a target view) gives zero colour channels.
LACT_HOST_DEVICE inline void ray_token_channels(const RayPose& p, int u, int v, const float* rgb, float* out) {
  // The normalised pixel coordinates in float (as the official code), then rotated and normalised in double.
  const double x = (static_cast<float>(u) + 0.5f - p.cx) / p.fx;
  const double y = (static_cast<float>(v) + 0.5f - p.cy) / p.fy;
  double d[3];
  for (int r = 0; r < 3; ++r) d[r] = p.c2w[r * 4 + 0] * x + p.c2w[r * 4 + 1] * y + p.c2w[r * 4 + 2];
  const double norm = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  float o[3], n[3];
  for (int r = 0; r < 3; ++r) {
    n[r] = static_cast<float>(d[r] / norm);
    o[r] = static_cast<float>(p.c2w[r * 4 + 3]);
  }
  out[0] = o[0], out[1] = o[1], out[2] = o[2];
  out[3] = n[0], out[4] = n[1], out[5] = n[2];
  out[6] = o[1] * n[2] - o[2] * n[1];
  out[7] = o[2] * n[0] - o[0] * n[2];
  out[8] = o[0] * n[1] - o[1] * n[0];
  for (int ch = 0; ch < 3; ++ch) out[9 + ch] = rgb ? rgb[ch] * 2.0f - 1.0f : 0.0f;
}

}  // namespace lact
