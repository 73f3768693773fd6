#include "system/interrupt_cleanup.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>

#include "system/signal_cleanup.h"

namespace lact {

namespace {

constexpr int kMadeFolders = 8;  // -o a/b/c/desk: the folders an import may make on the way, at most this many
constexpr int kMaxDepth = 16;    // of the working folder's tree (images/, sparse/0/, frames/): deeper is left

char work_folder[PATH_MAX];
char made_folders[kMadeFolders][PATH_MAX];
std::atomic<int> made_count{0};
char note_line[256];
size_t note_length = 0;

struct LinuxDirent64 {
  ino64_t d_ino;
  off64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

// Removes what the folder `fd` holds, entries first; async-signal-safe (no allocation, no stdio).
void remove_contents(int fd, int depth) {
  alignas(8) char buffer[4096];
  for (int pass = 0; pass < 64; ++pass) {  // entries removed while listing: list again until nothing is left
    ::lseek(fd, 0, SEEK_SET);
    bool removed = false;
    long n;
    while ((n = ::syscall(SYS_getdents64, fd, buffer, sizeof buffer)) > 0) {
      for (long at = 0; at < n;) {
        const auto* entry = reinterpret_cast<const LinuxDirent64*>(buffer + at);
        at += entry->d_reclen;
        const char* name = entry->d_name;
        if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
        if (::unlinkat(fd, name, 0) == 0) {
          removed = true;
          continue;
        }
        if (depth >= kMaxDepth) continue;
        const int child = ::openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child < 0) continue;
        remove_contents(child, depth + 1);
        ::close(child);
        removed = ::unlinkat(fd, name, AT_REMOVEDIR) == 0 || removed;
      }
    }
    if (!removed) return;
  }
}

void remove_work_folder() {
  if (work_folder[0] == '\0') return;
  const int fd = ::open(work_folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    remove_contents(fd, 0);
    ::close(fd);
  }
  ::rmdir(work_folder);
  for (int i = 0; i < made_count.load(); ++i)
    if (::rmdir(made_folders[i]) != 0) break;  // not empty: its parents are not ours to empty
}

// The signal cleanup's last step (system/signal_cleanup.h): the programs lact started are stopped by then, so
// none writes into the folder again.
void remove_work_folder_and_say_so() {
  remove_work_folder();
  const ssize_t written = ::write(STDERR_FILENO, note_line, note_length);
  (void)written;
}

void copy_path(char (&to)[PATH_MAX], const std::string& from) {
  const size_t n = from.size() < PATH_MAX ? from.size() : 0;  // a longer path is not removed
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

}  // namespace

InterruptCleanup::InterruptCleanup(const std::string& work, const std::vector<std::string>& made,
                                   const std::string& note) {
  copy_path(work_folder, work);
  note_length = std::min(note.size() + 1, sizeof note_line);
  std::memcpy(note_line, note.data(), note_length - 1);
  note_line[note_length - 1] = '\n';
  int count = 0;
  for (const std::string& folder : made)
    if (count < kMadeFolders && folder.size() < PATH_MAX) copy_path(made_folders[count++], folder);
  made_count.store(count);
  set_signal_cleanup_step(remove_work_folder_and_say_so);
}

InterruptCleanup::~InterruptCleanup() {
  set_signal_cleanup_step(nullptr);
  made_count.store(0);
  work_folder[0] = '\0';
}

}  // namespace lact
