# system/'s sources: the one list its CMakeLists.txt and the fuzz project (tests/fuzz) both build from.
set(LACT_SYSTEM_SOURCES
  file_io.cpp
  mapped_file.cpp
  file_identity.cpp
  signal_cleanup.cpp
  interrupt_cleanup.cpp
  json_text.cpp
  utf8_text.cpp
  terminal_text.cpp
  subprocess.cpp
  output_files.cpp
  host_memory.cpp
  thread_limit.cpp
)
# Linked into the lact executable only (an object library, system/CMakeLists.txt): signals blocked before main.
set(LACT_SYSTEM_EXECUTABLE_SOURCES
  signal_block_at_start.cpp
)
