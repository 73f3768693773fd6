// Lens undistortion for OpenCV radial-tangential cameras (nerfstudio / DL3DV transforms.json k1, k2, k3, p1, p2;
// COLMAP's SIMPLE_RADIAL, RADIAL, OPENCV and FULL_OPENCV) and OpenCV's fisheye (Kannala-Brandt) cameras
// (nerfstudio's OPENCV_FISHEYE; COLMAP's OPENCV_FISHEYE, SIMPLE_RADIAL_FISHEYE, RADIAL_FISHEYE): the pinhole
// intrinsics OpenCV's getOptimalNewCameraMatrix(alpha = 0) picks, and the resampling cv::undistort does onto them,
// written from the models below.
//
// Model, on normalized undistorted coordinates (x, y), r2 = x^2 + y^2, with OpenCV's rational radial factor
//   radial = (1 + k1 r2 + k2 r2^2 + k3 r2^3) / (1 + k4 r2 + k5 r2^2 + k6 r2^3)   (k4..k6: FULL_OPENCV only)
//   x_d = x radial + 2 p1 x y + p2 (r2 + 2 x^2)
//   y_d = y radial + p1 (r2 + 2 y^2) + 2 p2 x y
// or, for a fisheye, of the angle theta = atan(r) from the axis (r = sqrt(r2); radial = 1 at r = 0)
//   radial = theta (1 + k1 theta^2 + k2 theta^4 + k3 theta^6 + k4 theta^8) / r,   no p1, p2, k5, k6
//   x_d = x radial,  y_d = y radial
// and the distorted pixel is (fx x_d + cx, fy y_d + cy). A pinhole view holds only theta < 90 deg: a fisheye whose
// image sides reach that is refused (the corners may: the inscribed rectangle never reaches them). Pixel centres are at
// integer coordinates (OpenCV's convention), so pixel (0, 0) is at (0, 0) and the image spans [0, W-1] x [0, H-1]
// between centres.
#pragma once

#include <string>
#include <vector>

#include "core/camera.h"

namespace lact {

struct LensDistortion {
  double k1 = 0, k2 = 0, p1 = 0, p2 = 0;
  double k3 = 0, k4 = 0, k5 = 0, k6 = 0;  // FULL_OPENCV's rational terms; zero gives the k1 k2 p1 p2 model exactly
  bool fisheye = false;                   // k1..k4 are the fisheye's (the model above); p1, p2, k5, k6 zero
  bool any() const;                       // any coefficient non-zero, or a fisheye (even an equidistant one)
};
bool operator==(const LensDistortion& a, const LensDistortion& b);

// Normalized undistorted -> normalized distorted (the forward model above).
void distort_normalized(const LensDistortion& d, double x, double y, double& xd, double& yd);

// The inverse of distort_normalized, by damped Newton iteration to a residual of ~1e-13 (cv::undistortPoints
// stops after 5 fixed-point steps; this one converges). Returns false if it did not converge.
bool undistort_normalized(const LensDistortion& d, double xd, double yd, double& x, double& y);

// getOptimalNewCameraMatrix with alpha = 0 and the same image size: undistort 9 points along each side of the
// distorted image (at u = 0, W/8, ..., W: OpenCV's sampling, which reaches one pixel past the last pixel centre),
// take the largest axis-aligned rectangle [x0, x1] x [y0, y1] inside them, and scale it onto the pixel centres
// 0 .. W-1: fx' = (W-1) / (x1 - x0), cx' = -fx' x0 (likewise y). Matches OpenCV to ~0.1 px (OpenCV stops its
// inverse after 5 steps); like OpenCV, zero distortion gives K scaled by (W-1)/W, not K. Returns `distorted` with
// only fx, fy, cx, cy changed. Throws Error(where, ...) for bad input or a distortion not invertible at the image
// border; readers pass the file and camera ("cameras.bin camera 3", "transforms.json frame 0").
Camera undistorted_camera(const Camera& distorted, const LensDistortion& d, const std::string& where = "undistort");

// Resamples an interleaved float image (`channels` per pixel, width x height of `distorted`) to `pinhole`
// (same size), as cv::undistort(img, K, dist, None, K') does: output pixel (u, v) -> x = (u - cx')/fx',
// y = (v - cy')/fy' -> distort_normalized -> source (fx x_d + cx, fy y_d + cy), sampled bilinearly.
// Sources outside the image clamp to the edge (OpenCV fills black there; with alpha = 0 there are none or
// almost none). Throws Error for bad input.
std::vector<float> undistort_image(const std::vector<float>& pixels, int channels, const Camera& distorted,
                                   const LensDistortion& d, const Camera& pinhole);

}  // namespace lact
