// Views -> tokens and tokens -> images on the host: the reference for the backends' ray_tokens op (which the
// model uses: only poses and pixels travel) and the decoder output's unpatchify.
#pragma once

#include <vector>

#include "core/camera.h"

namespace lact {

// Per-pixel rays at pixel centres: origin = camera centre, direction = normalize(R * K^-1 [u+.5, v+.5, 1]).
// `origins` and `directions` are height*width*3 (row-major pixels, xyz fastest).
void compute_rays(const Camera& camera, int height, int width, std::vector<float>& origins,
                  std::vector<float>& directions);

// Tokens for `views` (all of one size): [views * (H/p) * (W/p), p*p*12], token order view, patch row, patch
// column; within a token (py, px, c) with c fastest and channels [o, d, o x d, rgb*2-1]. Views without an
// image (targets) get zeros in the rgb channels.
std::vector<float> build_tokens(const std::vector<PosedImage>& views, int height, int width, int patch);

// The inverse of the patchify for the decoder output [views * tokens, p*p*3] (values as given).
std::vector<Image> unpatchify(const std::vector<float>& patches, int views, int height, int width, int patch);
// View `view` of the patches alone, written to `out` (height x width x 3 floats).
void unpatchify_view(const std::vector<float>& patches, int view, int height, int width, int patch, float* out);

}  // namespace lact
