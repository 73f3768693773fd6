// What `lact serve` shows a client of an error that names files: the docs promise answers hold no path of this
// machine (docs/guide/serve.md: security), yet an encode's or a video's error names its file in full ("a missing
// image /home/me/data/chair/images/020.png"). The server's folders (the scenes', the models', --out) are dropped
// from the names under them ("images/020.png", relative to the scene), and any other absolute path is cut to its
// file name. The terminal keeps the full message. Unit-tested by tests/unit/serve/test_serve.cpp.
#pragma once

#include <string>
#include <vector>

namespace lact::serve {

class ShownPaths {
 public:
  ShownPaths() = default;
  // `folders`: as given on the command line (relative or absolute); each is also matched in its absolute forms.
  explicit ShownPaths(const std::vector<std::string>& folders);
  std::string operator()(std::string message) const;

 private:
  std::vector<std::string> prefixes_;  // "FOLDER/", longest first
};

}  // namespace lact::serve
