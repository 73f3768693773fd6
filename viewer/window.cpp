#include "viewer/window.h"

#include <glad/gl.h>
// glad first: GLFW must not include the system GL header.
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <cfloat>

#include "system/error.h"

namespace lact::viewer {

namespace {
std::string last_glfw_error() {
  const char* description = nullptr;
  glfwGetError(&description);
  return description ? description : "unknown GLFW error";
}
}  // namespace

Window::Window(int width, int height, const std::string& title) {
  if (!glfwInit())
    throw Error("view", "cannot open a window: " + last_glfw_error() +
                            " (no display: lact serve takes the same flags and shows the viewer in a browser, "
                            "e.g. over ssh -L 8080:localhost:8080)");
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);  // X11, Windows: the size in screen units, as on macOS
  window_ = glfwCreateWindow(width, height, title.c_str(), nullptr, nullptr);
  if (!window_) {
    const std::string why = last_glfw_error();
    glfwTerminate();
    throw Error("view", "cannot open an OpenGL 3.3 core window: " + why);
  }
  glfwMakeContextCurrent(window_);
  if (!gladLoadGL(reinterpret_cast<GLADloadfunc>(glfwGetProcAddress))) {
    glfwDestroyWindow(window_);
    glfwTerminate();
    throw Error("view", "cannot load the OpenGL 3.3 functions");
  }
  // Before ImGui's backend, which chains to the callbacks already installed.
  glfwSetWindowUserPointer(window_, this);
  glfwSetKeyCallback(window_, &Window::on_key);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // no imgui.ini in the working folder
  ImGui::StyleColorsDark();
  use_content_scale();
  imgui_glfw_ = ImGui_ImplGlfw_InitForOpenGL(window_, true);
  imgui_gl_ = imgui_glfw_ && ImGui_ImplOpenGL3_Init("#version 330 core");
  if (!imgui_gl_) {
    shutdown();
    throw Error("view", "cannot start Dear ImGui's OpenGL 3 backend");
  }
}

Window::~Window() { shutdown(); }

// Where the desktop asks for larger text (X11's Xft.dpi, Windows' display scale) but the framebuffer has as many
// pixels as the window, ImGui works in screen units of ui_scale_ pixels, as on macOS's Retina displays; its
// font is drawn at the pixel size (not magnified). Where the framebuffer is already larger (macOS), nothing changes.
void Window::use_content_scale() {
  float x = 1, y = 1;
  glfwGetWindowContentScale(window_, &x, &y);
  int fw = 0, fh = 0, ww = 0, wh = 0;
  glfwGetFramebufferSize(window_, &fw, &fh);
  glfwGetWindowSize(window_, &ww, &wh);
  const float pixels_per_unit = ww > 0 && fw > 0 ? static_cast<float>(fw) / ww : 1.0f;
  const float scale = std::clamp(x / pixels_per_unit, 1.0f, 4.0f);
  if (scale < 1.05f) return;
  ui_scale_ = scale;
  ImGuiIO& io = ImGui::GetIO();
  ImFontConfig font;
  font.SizePixels = 13.0f * scale;  // ImGui's default font, at its 13 units
  io.Fonts->AddFontDefault(&font);
  io.FontGlobalScale = 1.0f / scale;
}

void Window::shutdown() {
  if (!window_) return;
  if (imgui_gl_) ImGui_ImplOpenGL3_Shutdown();
  if (imgui_glfw_) ImGui_ImplGlfw_Shutdown();
  if (ImGui::GetCurrentContext()) ImGui::DestroyContext();
  glfwDestroyWindow(window_);
  glfwTerminate();
  window_ = nullptr;
}

void Window::on_key(GLFWwindow* window, int key, int, int action, int) {
  auto* self = static_cast<Window*>(glfwGetWindowUserPointer(window));
  if (self && (action == GLFW_PRESS || action == GLFW_REPEAT))
    self->key_presses_.push_back({key, action == GLFW_REPEAT});
}

std::vector<Window::KeyPress> Window::take_key_presses() {
  std::vector<KeyPress> presses;
  presses.swap(key_presses_);
  return presses;
}

bool Window::should_close() const { return glfwWindowShouldClose(window_); }

void Window::close() { glfwSetWindowShouldClose(window_, GLFW_TRUE); }
void Window::hide() { glfwHideWindow(window_); }
void Window::poll_events() { glfwPollEvents(); }
void Window::wait_events(double timeout_seconds) { glfwWaitEventsTimeout(timeout_seconds); }
void Window::wake() { glfwPostEmptyEvent(); }
void Window::set_vsync(bool on) { glfwSwapInterval(on ? 1 : 0); }
void Window::set_title(const std::string& title) { glfwSetWindowTitle(window_, title.c_str()); }

void Window::begin_frame() {
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  if (ui_scale_ != 1.0f) {  // the backend set window pixels: screen units of ui_scale_ pixels instead
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = ImVec2(io.DisplaySize.x / ui_scale_, io.DisplaySize.y / ui_scale_);
    io.DisplayFramebufferScale =
        ImVec2(io.DisplayFramebufferScale.x * ui_scale_, io.DisplayFramebufferScale.y * ui_scale_);
    if (io.MousePos.x > -FLT_MAX / 2) io.MousePos = ImVec2(io.MousePos.x / ui_scale_, io.MousePos.y / ui_scale_);
  }
  ImGui::NewFrame();
}

std::optional<Rgb8> Window::end_frame(bool capture) {
  ImGui::Render();
  int width = 0, height = 0;
  glfwGetFramebufferSize(window_, &width, &height);
  glViewport(0, 0, width, height);
  glClearColor(0.09f, 0.09f, 0.10f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  std::optional<Rgb8> pixels;
  if (capture && width > 0 && height > 0) {
    Rgb8 image;
    image.width = width;
    image.height = height;
    image.pixels.resize(static_cast<size_t>(width) * height * 3);
    glFinish();
    glReadBuffer(GL_BACK);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, image.pixels.data());
    flip_rows(image);
    pixels = std::move(image);
  }
  glfwSwapBuffers(window_);
  return pixels;
}

double Window::refresh_rate() const {
  GLFWmonitor* monitor = glfwGetPrimaryMonitor();
  const GLFWvidmode* mode = monitor ? glfwGetVideoMode(monitor) : nullptr;
  return mode && mode->refreshRate >= 20 && mode->refreshRate <= 500 ? mode->refreshRate : 60.0;
}

float Window::framebuffer_scale() const {
  int fw = 0, fh = 0, ww = 0, wh = 0;
  glfwGetFramebufferSize(window_, &fw, &fh);
  glfwGetWindowSize(window_, &ww, &wh);
  return (ww > 0 ? static_cast<float>(fw) / ww : 1.0f) * ui_scale_;
}

}  // namespace lact::viewer
