# session/'s sources, in two lists that its CMakeLists.txt joins: the window-free camera controller (which the
# fuzz project, tests/fuzz, builds for lact serve's camera messages) and the rest of the session.
set(LACT_SESSION_CAMERA_SOURCES
  camera_controller.cpp
)
set(LACT_SESSION_SOURCES
  frame_stats.cpp
  path_recorder.cpp
  typed_outputs.cpp
  pixels.cpp
  scene_source.cpp
  encode_job.cpp
  render_thread.cpp
)
