#include "viewer/camera_input.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

namespace lact::viewer {

namespace {
constexpr double kRadiansPerPixel = 0.006;
}  // namespace

InputActions apply_camera_input(CameraController& camera, bool fly, double zoom, double seconds) {
  InputActions a;
  const ImGuiIO& io = ImGui::GetIO();
  if (!io.WantCaptureMouse) {
    const double dx = io.MouseDelta.x, dy = io.MouseDelta.y;
    const bool left = ImGui::IsMouseDown(ImGuiMouseButton_Left), middle = ImGui::IsMouseDown(ImGuiMouseButton_Middle);
    const bool moved = dx != 0 || dy != 0;
    if (middle || (left && io.KeyShift)) {
      if (moved) camera.pan(dx / zoom, dy / zoom);
      a.camera_moving = true;
    } else if (left) {
      // Dragging right turns the scene right (the camera goes left around it); dragging down raises the camera.
      if (moved) {
        if (fly)
          camera.look(-dx * kRadiansPerPixel, -dy * kRadiansPerPixel);
        else
          camera.orbit(-dx * kRadiansPerPixel, dy * kRadiansPerPixel);
      }
      a.camera_moving = true;
    }
    if (io.MouseWheel != 0) camera.dolly(io.MouseWheel);
  }
  if (io.WantCaptureKeyboard) return a;

  Vec3 direction{0, 0, 0};
  if (ImGui::IsKeyDown(GLFW_KEY_W)) direction[2] += 1;
  if (ImGui::IsKeyDown(GLFW_KEY_S)) direction[2] -= 1;
  if (ImGui::IsKeyDown(GLFW_KEY_D)) direction[0] += 1;
  if (ImGui::IsKeyDown(GLFW_KEY_A)) direction[0] -= 1;
  if (ImGui::IsKeyDown(GLFW_KEY_E)) direction[1] += 1;
  if (ImGui::IsKeyDown(GLFW_KEY_Q)) direction[1] -= 1;
  if (direction[0] != 0 || direction[1] != 0 || direction[2] != 0) {
    camera.move(direction, seconds * (io.KeyShift ? 4 : 1));
    a.camera_moving = true;
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_EQUAL) || ImGui::IsKeyPressed(GLFW_KEY_KP_ADD)) camera.speed *= 1.5;
  if (ImGui::IsKeyPressed(GLFW_KEY_MINUS) || ImGui::IsKeyPressed(GLFW_KEY_KP_SUBTRACT)) camera.speed /= 1.5;
  a.snap_previous = ImGui::IsKeyPressed(GLFW_KEY_LEFT_BRACKET, false);
  a.snap_next = ImGui::IsKeyPressed(GLFW_KEY_RIGHT_BRACKET, false);
  a.reset = ImGui::IsKeyPressed(GLFW_KEY_R, false);
  a.toggle_fly = ImGui::IsKeyPressed(GLFW_KEY_F, false);
  a.screenshot = ImGui::IsKeyPressed(GLFW_KEY_F12, false);
  a.add_key = ImGui::IsKeyPressed(GLFW_KEY_K, false);
  a.toggle_play = ImGui::IsKeyPressed(GLFW_KEY_P, false);
  a.toggle_truth = ImGui::IsKeyPressed(GLFW_KEY_G, false);
  a.toggle_error = ImGui::IsKeyPressed(GLFW_KEY_X, false);
  return a;
}

}  // namespace lact::viewer
