// Reading and writing files safely: inputs must be regular files (a FIFO or a device would block or stream
// forever), and every output is written to a temporary file beside its final name, checked (each write, the
// fsync, the close), then renamed into place. A crash, `kill -9` or a full disk therefore never leaves a partial
// file under a final name, and never destroys the file that was there before; SIGINT/SIGTERM/SIGHUP also remove
// the temporary (system/signal_cleanup.h).
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lact {

// Throws Error(path, ...) unless `path` names a regular file (symlinks followed): missing, a folder, a FIFO,
// a device or a socket is refused before anything opens it.
void require_regular_file(const std::string& path);

// Opens a regular file for reading and fstat()s the descriptor into `info`: O_NONBLOCK, so a FIFO named there
// cannot block the open, and the type checked on what was opened (a file swapped after a check is seen). Error
// naming `path` when it is missing, a folder or not a regular file; the caller closes the descriptor.
int open_regular_file(const std::string& path, struct stat& info);

// `path` made absolute against the working folder and normalised ("x/../a" -> "/cwd/a"): one file, one name however
// it was spelled; `path` as given when the working folder cannot be read.
std::string absolute_path(const std::string& path);

// The whole regular file; Error naming it when it is missing, not regular, larger than `max_bytes` or unreadable.
std::string read_whole_file(const std::string& path, uint64_t max_bytes);

// Where an output named `path` is really written: a link is followed (to its final target, so the link itself
// is never replaced by a regular file), and a name whose real place is under /dev, /proc or /sys is refused as
// not a file (-o /dev/stdout would otherwise replace the system's link). Returns an absolute path; Error(path)
// when it is refused, is a folder or exists as something other than a regular file.
std::string resolve_output_path(const std::string& path);

// Error(path) when `path` is relative and the working folder it is relative to no longer exists (removed under
// a shell that still stands in it): said as such, rather than as an empty folder name or "No such file".
void check_working_folder_for(const std::string& path);

// True when `path`'s real place (its folder's links resolved) is under /dev, /proc or /sys.
bool under_system_folder(const std::string& path);

// Outputs the user named without --force: a commit to this path (AtomicFile, rename_into_place) never replaces
// a file that another run put there meanwhile. check_named_output() calls it; every other output (lact's own
// files inside --out) is replaced as before.
void require_new_file(const std::string& path);
// Undoes require_new_file(path): a long-lived process (the Python module) whose user names the path again with
// force (State.save(path, force=True) after a save without) may replace the file there again.
void allow_replacing(const std::string& path);

// Moves the finished `temporary` to `path` (the name from resolve_output_path, same folder). For a path given
// to require_new_file() the move never replaces a file there (renameat2 RENAME_NOREPLACE, else link+unlink):
// Error(path, "appeared while this run worked ..."). `temporary` is left in place when it fails.
void rename_into_place(const std::string& temporary, const std::string& path);

// Whether an AtomicFile's commit may replace a file at its path: Never for this one file as require_new_file
// makes it for every later write of a path (renameat2 RENAME_NOREPLACE, else link+unlink).
enum class Replace { Allowed, Never };

// An output file written atomically. Bytes go to a temporary file in the same folder (so the rename cannot
// cross filesystems, and registered so a signal removes it); commit() checks, fsyncs and renames it into place
// (rename_into_place; with Replace::Never, never over a file there). Destroyed without commit(), or when any
// step fails, it removes the temporary and leaves `path` as it was. Errors name `path` as given.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path, Replace replace = Replace::Allowed);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void commit();
  const std::string& path() const { return path_; }

 private:
  void fail(const std::string& what);
  void remove_temporary();
  std::string path_, target_, temp_;
  int fd_ = -1, temp_token_ = -1;
  Replace replace_;
};

// write_file_atomically(path, bytes): AtomicFile in one call.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace lact
