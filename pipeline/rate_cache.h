// Rates measured once per machine and kept between runs (the model's matrix-product rates behind the time
// estimate, pipeline/time_estimate.h): one small text file under $XDG_CACHE_HOME/lact/ (else ~/.cache/lact/).
// A cache is never an error: a file that cannot be read or is malformed is ignored (and replaced by the next
// write), one that cannot be written is simply not kept.
#pragma once

#include <map>
#include <string>

namespace lact {

class RateCache {
 public:
  // The file at `path` ("": nothing read, nothing kept).
  explicit RateCache(std::string path);
  // $XDG_CACHE_HOME/lact/rates.txt, else $HOME/.cache/lact/rates.txt (each only when an absolute path, as the
  // XDG base directory specification asks); "" when neither is.
  static std::string default_path();
  const std::string& path() const { return path_; }

  // The value kept under `key`, 0 when none.
  double find(const std::string& key);
  // `values` kept under their keys: the file read again (another process may have added to it), merged and
  // replaced at once (a new file renamed over it). Keys hold no tab or line break; values are finite and > 0.
  void keep(const std::map<std::string, double>& values);

  // The file's entries as read from `text`: empty for anything but this format (its header, then lines of
  // "value<TAB>key"); a malformed line is skipped.
  static std::map<std::string, double> parse(const std::string& text);
  static std::string format(const std::map<std::string, double>& values);

 private:
  std::map<std::string, double> read_file() const;
  std::string path_;
  std::map<std::string, double> values_;
  bool read_ = false;
};

}  // namespace lact
