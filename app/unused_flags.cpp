#include "app/unused_flags.h"

#include "system/error.h"

namespace lact::app {

void refuse_unused_flags(const CLI::App& command, const std::vector<std::string>& flags, const std::string& why) {
  for (const std::string& flag : flags) {
    const CLI::Option* option = command.get_option_no_throw(flag);
    if (option && option->count() > 0) throw Error(flag, why);
  }
}

const std::vector<std::string>& data_detail_flags() {
  static const std::vector<std::string> flags = {"--scene",           "--inputs", "--size",      "--background",
                                                 "--normalize-poses", "--seed",   "--downscale", "--images"};
  return flags;
}

}  // namespace lact::app
