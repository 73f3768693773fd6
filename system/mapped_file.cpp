#include "system/mapped_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>

#include "system/error.h"
#include "system/file_io.h"
#include "system/host_memory.h"
#include "system/signal_cleanup.h"
#include "system/terminal_text.h"

namespace lact {

namespace {

// The SIGBUS handler's table: lock-free slots written under `registry_mutex` and read by the handler, which
// may run on any thread (an OpenMP worker reading a weight) at any time.
struct GuardSlot {
  std::atomic<uintptr_t> begin{0}, end{0};  // begin 0: free
  std::atomic<const char*> message{nullptr};
  std::atomic<size_t> length{0};
};
constexpr int kGuardSlots = 64;  // more live mappings than this stay unguarded against SIGBUS (still checked)
GuardSlot guard_slots[kGuardSlots];
struct sigaction previous_sigbus {};

std::mutex registry_mutex;
std::set<const MappedFile*>& live_mappings() {
  static std::set<const MappedFile*> live;
  return live;
}

// Async-signal-safe: reads the table, write(2), the signal cleanup's unlink and kill, _exit.
void on_sigbus(int signal, siginfo_t* info, void* context) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (GuardSlot& slot : guard_slots) {
    const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    if (begin == 0 || address < begin || address >= slot.end.load(std::memory_order_acquire)) continue;
    // Several threads may fault at once: one prints the line, the others wait for its _exit.
    static std::atomic<bool> reporting{false};
    if (reporting.exchange(true))
      for (;;) pause();
    const char* message = slot.message.load(std::memory_order_acquire);
    const ssize_t ignored = write(STDERR_FILENO, message, slot.length.load(std::memory_order_acquire));
    (void)ignored;
    clean_up_before_fatal_exit();  // no ffmpeg left running, no temporary (a --video's) left behind
    _exit(1);
  }
  // Not a mapped file: whoever handled SIGBUS before (a sanitizer, the default's core dump) takes it. A fault
  // repeats when the handler returns; a sent signal is raised again (pending until then).
  sigaction(SIGBUS, &previous_sigbus, nullptr);
  if (info->si_code <= 0) raise(signal);
  (void)context;
}

void install_sigbus_guard() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &previous_sigbus);
  });
}

// Formatted here, before any signal: the handler only writes it. The path is escaped (system/terminal_text.h).
std::string bus_line(const std::string& path) {
  return "lact: " + terminal_text(path) + ": changed while lact was using it (truncated?)\n";
}

int take_guard_slot(uint8_t* data, size_t size, const std::string& message) {
  for (int i = 0; i < kGuardSlots; ++i) {
    GuardSlot& slot = guard_slots[i];
    if (slot.begin.load(std::memory_order_relaxed) != 0) continue;
    slot.message.store(message.c_str(), std::memory_order_relaxed);
    slot.length.store(message.size(), std::memory_order_relaxed);
    slot.end.store(reinterpret_cast<uintptr_t>(data) + size, std::memory_order_relaxed);
    slot.begin.store(reinterpret_cast<uintptr_t>(data), std::memory_order_release);
    return i;
  }
  return -1;
}

}  // namespace

MappedFile::MappedFile(std::string path, int fd, uint8_t* data, size_t size, const struct timespec& modified)
    : path_(std::move(path)), fd_(fd), data_(data), size_(size), modified_(modified), bus_message_(bus_line(path_)) {
  if (!data_) return;
  install_sigbus_guard();
  const std::lock_guard<std::mutex> lock(registry_mutex);
  live_mappings().insert(this);
  guard_slot_ = take_guard_slot(data_, size_, bus_message_);
}

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  struct stat info {};
  const int fd = open_regular_file(path, info);
  const size_t size = static_cast<size_t>(info.st_size);
  void* data = nullptr;
  if (size > 0) {
    data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      const int error = errno;
      ::close(fd);
      throw Error(path, std::string("cannot map file (") + std::strerror(error) + ")");
    }
  }
  return std::shared_ptr<MappedFile>(new MappedFile(path, fd, static_cast<uint8_t*>(data), size, info.st_mtim));
}

void MappedFile::check_unchanged() const {
  struct stat now {};
  if (fstat(fd_, &now) != 0) throw Error(path_, std::string("cannot check the file (") + std::strerror(errno) + ")");
  if (static_cast<size_t>(now.st_size) != size_)
    throw Error(path_, "changed while lact was using it (now " + std::to_string(now.st_size) + " bytes, " +
                           std::to_string(size_) + " when opened)");
  if (now.st_mtim.tv_sec != modified_.tv_sec || now.st_mtim.tv_nsec != modified_.tv_nsec)
    throw Error(path_, "changed while lact was using it (modified after lact opened it)");
}

void check_mapped_files_unchanged() {
  const std::lock_guard<std::mutex> lock(registry_mutex);
  for (const MappedFile* file : live_mappings()) file->check_unchanged();
}

MappedMemory mapped_files_memory() {
  const std::lock_guard<std::mutex> lock(registry_mutex);
  MappedMemory m;
  for (const MappedFile* file : live_mappings()) {
    m.size += static_cast<int64_t>(file->size());
    if (file->data()) m.resident += resident_bytes_in(file->data(), file->size());
  }
  return m;
}

MappedFile::~MappedFile() {
  if (data_) {
    const std::lock_guard<std::mutex> lock(registry_mutex);
    live_mappings().erase(this);
    if (guard_slot_ >= 0) guard_slots[guard_slot_].begin.store(0, std::memory_order_release);
  }
  if (data_) munmap(data_, size_);  // after the slot is free: the handler never matches an unmapped range
  ::close(fd_);
}

}  // namespace lact
