// Errors after the window opened (bad data, model mismatch, an unwritable file): a modal ImGui popup, one
// message at a time, never a crash.
#pragma once

#include <deque>
#include <string>

namespace lact::viewer {

class ErrorPopup {
 public:
  void show(const std::string& message);
  // Every frame, inside the ImGui frame. `dismiss`: Enter or Esc was pressed this frame (the window's key presses:
  // ImGui 1.86 misses a tap inside one frame), which closes the message shown, as its OK button does.
  void draw(bool dismiss);
  bool open() const { return !messages_.empty(); }

 private:
  std::deque<std::string> messages_;
  bool opened_ = false;
};

}  // namespace lact::viewer
