#include "viewer/camera_input.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

namespace lact::viewer {

namespace {
constexpr double kRadiansPerPixel = 0.006;
}  // namespace

InputActions apply_camera_input(CameraController& camera, bool fly, double zoom, double seconds,
                                const std::vector<Window::KeyPress>& presses, bool move) {
  InputActions a;
  const ImGuiIO& io = ImGui::GetIO();
  if (move && !io.WantCaptureMouse) {
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
  for (const Window::KeyPress& p : presses)
    if (!p.repeat && (p.key == GLFW_KEY_ESCAPE || p.key == GLFW_KEY_ENTER || p.key == GLFW_KEY_KP_ENTER))
      a.dismiss = true;
  if (io.WantCaptureKeyboard) return a;

  Vec3 direction{0, 0, 0};
  if (ImGui::IsKeyDown(GLFW_KEY_W)) direction[2] += 1;
  if (ImGui::IsKeyDown(GLFW_KEY_S)) direction[2] -= 1;
  if (ImGui::IsKeyDown(GLFW_KEY_D)) direction[0] += 1;
  if (ImGui::IsKeyDown(GLFW_KEY_A)) direction[0] -= 1;
  if (ImGui::IsKeyDown(GLFW_KEY_E)) direction[1] += 1;
  if (ImGui::IsKeyDown(GLFW_KEY_Q)) direction[1] -= 1;
  if (move && (direction[0] != 0 || direction[1] != 0 || direction[2] != 0)) {
    camera.move(direction, seconds * (io.KeyShift ? 4 : 1));
    a.camera_moving = true;
  }
  auto pressed = [&](int key) {
    for (const Window::KeyPress& p : presses)
      if (p.key == key && !p.repeat) return true;
    return false;
  };
  for (const Window::KeyPress& p : presses) {  // speed keys repeat while held
    if (p.key == GLFW_KEY_EQUAL || p.key == GLFW_KEY_KP_ADD) camera.speed *= 1.5;
    if (p.key == GLFW_KEY_MINUS || p.key == GLFW_KEY_KP_SUBTRACT) camera.speed /= 1.5;
  }
  a.snap_previous = pressed(GLFW_KEY_LEFT_BRACKET);
  a.snap_next = pressed(GLFW_KEY_RIGHT_BRACKET);
  a.reset = pressed(GLFW_KEY_R);
  a.toggle_fly = pressed(GLFW_KEY_F);
  a.screenshot = pressed(GLFW_KEY_F12);
  a.add_key = pressed(GLFW_KEY_K);
  a.toggle_play = pressed(GLFW_KEY_P);
  a.toggle_truth = pressed(GLFW_KEY_G);
  a.toggle_error = pressed(GLFW_KEY_X);
  a.quit = pressed(GLFW_KEY_ESCAPE) || (!fly && pressed(GLFW_KEY_Q));
  return a;
}

}  // namespace lact::viewer
