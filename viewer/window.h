// The window: GLFW with an OpenGL 3.3 core context, the glad loader, Dear ImGui with its GLFW and OpenGL3
// backends. One frame = begin_frame(), ImGui calls, end_frame() (which can read the finished frame back).
// Sizes (the window's, ImGui's) are in screen units: on a high-DPI desktop (Xft.dpi 192, a Windows display scale of
// 200 %) a unit is several pixels, the window and its text that much larger, as on macOS's Retina displays.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "viewer/session_parts.h"

struct GLFWwindow;

namespace lact::viewer {

class Window {
 public:
  // Throws Error when no window can be opened (no display, no OpenGL 3.3).
  Window(int width, int height, const std::string& title);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  bool should_close() const;
  void close();  // should_close() is true from now on (Esc / Q)
  void hide();   // off the screen at once (the process may still finish work before it ends)
  void poll_events();
  void wait_events(double timeout_seconds);
  // Wakes wait_events from any thread.
  static void wake();

  void set_vsync(bool on);
  void set_title(const std::string& title);

  // Keys pressed (GLFW key codes, repeats included) since the last call. ImGui 1.86 only sees the key state once
  // per frame and misses a press and release inside one frame; these come from GLFW's callback.
  struct KeyPress {
    int key;
    bool repeat;
  };
  std::vector<KeyPress> take_key_presses();

  void begin_frame();
  // Draws ImGui's frame; with `capture`, returns the whole framebuffer as shown (top row first) before the swap.
  std::optional<Rgb8> end_frame(bool capture);

  // The primary monitor's refresh rate (60 when unknown).
  double refresh_rate() const;
  // Framebuffer pixels per ImGui (screen) unit.
  float framebuffer_scale() const;
  // Pixels per ImGui unit beyond the framebuffer's own scale: the desktop's content scale where its framebuffer is
  // not larger than the window (X11, Windows), else 1. Read when the window opens.
  float ui_scale() const { return ui_scale_; }

 private:
  void shutdown();
  void use_content_scale();
  static void on_key(GLFWwindow* window, int key, int scancode, int action, int mods);
  GLFWwindow* window_ = nullptr;
  std::vector<KeyPress> key_presses_;
  bool imgui_glfw_ = false, imgui_gl_ = false;
  float ui_scale_ = 1;
};

}  // namespace lact::viewer
