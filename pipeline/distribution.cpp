#include "pipeline/distribution.h"

#include "kernels/backend_factory.h"
#include "pipeline/run_agreement.h"
#include "system/error.h"
#include "system/utf8_text.h"

namespace lact {

RunBackend start_run_backend(const CommonOptions& options) {
  RunBackend run;
  const DistributedMode mode = parse_distributed_mode(options.distributed);
  if (mode == DistributedMode::None) {
    run.backend = make_backend(options);
    return run;
  }
  // A command that did not agree on its command line yet (start_agreed_ranks) agrees on an anonymous one: two
  // such commands are not compared, but one of them is never taken for a command that describes itself.
  RunDigest anonymous;
  anonymous.add("the subcommand", "(one that does not describe its command line)");
  run.distribution = start_agreed_ranks(options, anonymous);
  Ranks& ranks = *run.distribution.ranks;
  on_every_rank(run.distribution, [&] {
    CommonOptions mine = options;
    mine.backend = rank_device(mode, ranks, options.backend);
    run.backend = make_backend(mine);
  });
  run.collective = make_collective(mode, ranks, *run.backend);
  run.distribution.collective = run.collective.get();
  return run;
}

void on_every_rank(const Distribution& d, const std::function<void()>& step) {
  if (d.active())
    d.ranks->agree(step);
  else
    step();
}

std::pair<size_t, size_t> share_of(const Distribution& d, size_t count) {
  const auto [begin, end] = rank_share(static_cast<int64_t>(count), d.size(), d.rank());
  return {static_cast<size_t>(begin), static_cast<size_t>(end)};
}

Report merge_reports(const Distribution& d, const Report& mine) {
  if (!d.active()) return mine;
  nlohmann::json part = {{"header", mine.header}, {"scenes", nlohmann::json::array()}, {"failed", mine.failed}};
  for (const SceneReport& s : mine.scenes) part["scenes"].push_back(scene_report_to_json(s));
  Report all;
  // Names that are not UTF-8 travel escaped, as report.json writes them (a raw dump() would throw).
  for (const std::string& text : d.ranks->all_gather_text(with_utf8_strings(part).dump())) {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (all.header.is_null()) all.header = j.at("header");
    for (const nlohmann::json& s : j.at("scenes")) all.scenes.push_back(scene_report_from_json(s));
    for (const nlohmann::json& f : j.at("failed")) all.failed.push_back(f.get<std::pair<std::string, std::string>>());
  }
  return all;
}

}  // namespace lact
