#include "viewer/error_popup.h"

#include <imgui.h>

namespace lact::viewer {

void ErrorPopup::show(const std::string& message) {
  if (messages_.empty() || messages_.back() != message) messages_.push_back(message);
}

void ErrorPopup::draw(bool dismiss) {
  if (messages_.empty()) return;
  if (!opened_) {
    ImGui::OpenPopup("Error");
    opened_ = true;
  }
  const ImVec2 centre = ImGui::GetMainViewport()->GetCenter();
  ImGui::SetNextWindowPos(centre, ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSizeConstraints(ImVec2(320, 0), ImVec2(700, 500));
  if (ImGui::BeginPopupModal("Error", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::PushTextWrapPos(660);
    ImGui::TextUnformatted(messages_.front().c_str());
    ImGui::PopTextWrapPos();
    if (messages_.size() > 1) ImGui::TextDisabled("(%zu more)", messages_.size() - 1);
    ImGui::Separator();
    if (ImGui::Button("OK", ImVec2(120, 0)) || dismiss) {
      messages_.pop_front();
      opened_ = false;
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  } else {
    opened_ = false;  // closed some other way: show the next one
    messages_.pop_front();
  }
}

}  // namespace lact::viewer
