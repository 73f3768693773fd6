// Where lact may write. Files named by the user (-o, --video, --json ...) are never replaced without --force,
// and never when they are one of the run's inputs (the model, the state, the data); lact's own outputs inside
// --out are replaced (pipeline/output_ownership.h tells them from a user's file) and everything else there is
// left alone. Names that come from data (scene names) are made into safe folder names, and every output path is
// checked to stay under --out.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace lact {

// The files a run reads: none of them may be written.
class InputFiles {
 public:
  void add(const std::string& path);  // ignored when empty or missing
  // Error(`what`) when `path` is the same file as an input (also through links or another spelling).
  void check_not_input(const std::string& path, const std::string& what) const;

 private:
  std::map<std::pair<uint64_t, uint64_t>, std::string> files_;  // (device, inode) -> the name it was given as
};

// A file the user named with `flag`: refused when it exists (unless `force`), when it is a folder, when it is
// an input, or when its folder does not exist (with `create_folder`: cannot be made; make_parent_folder() makes
// it just before writing). Call before any work. A link is checked (and later written) as its target; a name
// under /dev, /proc or /sys is refused. Without `force` the commit of this output never replaces a file that
// appears there while the run works (require_new_file).
void check_named_output(const std::string& path, const std::string& flag, bool force, const InputFiles& inputs,
                        bool create_folder = false);
void make_parent_folder(const std::string& path);
// The first steps of check_named_output: `path` resolved (a link as its target; /dev, /proc, /sys refused) and
// refused when empty or one of `inputs`, errors naming `flag`.
std::string resolve_named_output(const std::string& path, const std::string& flag, const InputFiles& inputs);

// True for "report-rank-R-of-N.json" (R and N decimal), the name of a rank's progress record in --out
// (pipeline/resume.h progress_record_name): lact's own, as report.json is, so no scene folder takes it.
bool is_rank_record_name(const std::string& name);

// Error(path, "is a link inside the output folder ...") when `path` (inside --out) is a link.
void check_no_link_inside_out(const std::string& path);

// A scene name from a dataset made into one safe path component: no '/', '\\', "..", leading dot or control
// characters, at most 80 bytes; "scene" when nothing is left.
std::string safe_folder_name(const std::string& name);

// The --out folder of a run: created only when the first file is written (or by claim()); paths inside it only.
// Nothing inside it is written through a link: the folders lact makes there are opened without following links,
// so a link planted inside --out (to a folder or a file elsewhere) is refused rather than written through.
class OutputFolder {
 public:
  explicit OutputFolder(std::string root);
  ~OutputFolder();  // releases the claim; removes the folders claim() and file() made that are still empty
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  // Error naming the folder when it cannot become a writable folder (checked before any work).
  void check_writable() const;
  // Before any work, on the lead rank of a job (the other ranks of the job share its claim): makes the folder,
  // takes an exclusive lock on it for the job ("--out: DIR is in use by another lact run" when another run
  // holds it) and refuses a report.json / report.csv there that lact did not write (their `format` field or
  // header say) unless `force`.
  void claim(bool force);
  // A new folder for a scene called `name`: safe, distinct from every other scene's of this run (two scenes of
  // one name get "name" and "name-2") and from lact's own files in the folder ("report.json" gets
  // "scene-report.json", as a rank's record "report-rank-0-of-2.json" gets "scene-report-rank-0-of-2.json").
  std::string scene_folder(const std::string& name);
  // The folders scene_folder() would give scenes called `names`, in order, from now on (none is taken).
  std::vector<std::string> next_scene_folders(const std::vector<std::string>& names) const;
  // root/relative after checking it stays under root, passes through no link and is not an input; creates its
  // folder.
  std::string file(const std::string& relative, const InputFiles& inputs) const;
  const std::string& root() const { return root_; }

 private:
  std::string root_;
  std::set<std::string> used_;
  mutable std::vector<std::string> made_folders_;  // by file(), in the order made
  mutable std::mutex made_folders_mutex_;
  int lock_fd_ = -1;
  bool made_root_ = false;
};

// A CSV field per RFC 4180 (quoted when it holds a comma, quote or line break), with a cell that a
// spreadsheet would run as a formula (= + - @, tab, CR first) made inert by a leading apostrophe.
std::string csv_field(const std::string& text);

}  // namespace lact
