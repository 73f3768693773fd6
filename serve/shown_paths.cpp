#include "serve/shown_paths.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace fs = std::filesystem;

namespace lact::serve {

namespace {

// The forms a folder is named by in messages: as given, absolute, and with its links resolved.
std::vector<std::string> folder_forms(const std::string& folder) {
  std::vector<std::string> forms;
  if (folder.empty()) return forms;
  std::error_code error;
  const fs::path given(folder);
  for (const fs::path& form :
       {given.lexically_normal(), fs::absolute(given, error).lexically_normal(), fs::weakly_canonical(given, error)}) {
    std::string text = form.string();
    while (text.size() > 1 && text.back() == '/') text.pop_back();
    if (text.empty() || text == "." || text == "/") continue;
    forms.push_back(text + "/");
  }
  return forms;
}

// Each `folder` that starts a name (not the tail of a longer word: "mydata/" is not "data/").
void erase_folder(std::string& text, const std::string& folder) {
  for (size_t at = text.find(folder); at != std::string::npos; at = text.find(folder, at)) {
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_' ||
                   text[at - 1] == '.' || text[at - 1] == '-')) {
      ++at;
      continue;
    }
    text.erase(at, folder.size());
  }
}

bool path_end(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\'' || c == '"' || c == ')' || c == ':'; }
bool path_start(const std::string& text, size_t at) {
  if (text[at] != '/') return false;
  if (at == 0) return true;
  const char before = text[at - 1];
  return before == ' ' || before == '\'' || before == '"' || before == '(' || before == '=';
}

// Any other absolute path of two parts or more, cut to its file name; the API's own routes ("DELETE
// /api/video/3") stay as they are.
std::string cut_absolute_paths(const std::string& text) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    if (!path_start(text, at)) {
      out += text[at++];
      continue;
    }
    size_t end = at + 1;
    while (end < text.size() && !path_end(text[end])) ++end;
    const std::string path = text.substr(at, end - at);
    const size_t last = path.rfind('/');
    const bool route = path.compare(0, 5, "/api/") == 0 || path.compare(0, 7, "/stream") == 0;
    out += route || last == 0 ? path : path.substr(last + 1);
    at = end;
  }
  return out;
}

}  // namespace

ShownPaths::ShownPaths(const std::vector<std::string>& folders) {
  for (const std::string& folder : folders)
    for (std::string& form : folder_forms(folder)) prefixes_.push_back(std::move(form));
  std::sort(prefixes_.begin(), prefixes_.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  prefixes_.erase(std::unique(prefixes_.begin(), prefixes_.end()), prefixes_.end());
}

std::string ShownPaths::operator()(std::string message) const {
  for (const std::string& prefix : prefixes_) erase_folder(message, prefix);
  return cut_absolute_paths(message);
}

}  // namespace lact::serve
