# serve/'s socket-free sources, in two lists that its CMakeLists.txt joins into lact_serve_core: the request
# handling (access rules, request rules, camera messages: what the fuzz project, tests/fuzz, builds for fuzz_http)
# and the messages, frame encoding and keep-serving policy. The page (generated) and the server are added there.
set(LACT_SERVE_REQUEST_SOURCES
  access.cpp
  camera_message.cpp
  request_rules.cpp
)
set(LACT_SERVE_CORE_SOURCES
  keep_serving.cpp
  messages.cpp
  frame_encoding.cpp
  path_routes.cpp
  scene_engine.cpp
  served_scenes.cpp
  shown_paths.cpp
  write_progress.cpp
)
