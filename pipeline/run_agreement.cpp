#include "pipeline/run_agreement.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <new>
#include <set>

#include "datasets/view_selection.h"
#include "system/error.h"
#include "system/file_identity.h"

namespace lact {

namespace {

constexpr size_t kShownBytes = 60;
// What a rank contributes to an agreement: one of these, then its digest or its error message. Anything else
// comes from a rank at another exchange (Ranks::agree sends "" or a bare message).
constexpr const char* kDigest = "lact-digest:";
constexpr const char* kFailed = "lact-failed:";

std::string value_hash(const std::string& value) {
  return content_identity(reinterpret_cast<const uint8_t*>(value.data()), value.size());
}

// At most kShownBytes, never cut inside a UTF-8 sequence.
std::string shortened(const std::string& text) {
  if (text.size() <= kShownBytes) return text;
  size_t end = kShownBytes - 3;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end) + "...";
}

// Values in a byte string that is the same on every rank for the same values (the cluster's nodes share a byte
// order and float format, as MPI's own float exchanges assume).
class Canonical {
 public:
  Canonical& operator<<(double v) { return raw(&v, sizeof(v)); }
  Canonical& operator<<(int64_t v) { return raw(&v, sizeof(v)); }
  Canonical& operator<<(const std::string& s) {
    *this << static_cast<int64_t>(s.size());
    return raw(s.data(), s.size());
  }
  Canonical& operator<<(const Camera& c) {
    *this << int64_t{c.width} << int64_t{c.height} << double{c.fx} << double{c.fy} << double{c.cx} << double{c.cy};
    for (double v : c.c2w) *this << v;
    return *this;
  }
  const std::string& text() const { return text_; }

 private:
  Canonical& raw(const void* p, size_t n) {
    text_.append(static_cast<const char*>(p), n);
    return *this;
  }
  std::string text_;
};

// Every view's cameras and lens, the scene's name, layout and k-means list: what reading the scene's camera file
// gave, not the file's bytes (the same scene may be written with other image paths on another node).
std::string scene_cameras(const Scene& scene) {
  Canonical c;
  c << scene.name << scene.layout << static_cast<int64_t>(scene.views.size());
  for (const SceneView& v : scene.views) {
    const LensDistortion& d = v.distortion;
    c << v.camera << v.distorted_camera << v.split;
    for (double k : {d.k1, d.k2, d.p1, d.p2, d.k3, d.k4, d.k5, d.k6}) c << k;
  }
  for (int i : scene.kmeans_inputs) c << int64_t{i};
  return c.text();
}

std::string index_list(const std::vector<int>& indices) {
  std::string text;
  for (int i : indices) text += (text.empty() ? "" : ",") + std::to_string(i);
  return text.empty() ? "none" : text;
}

std::string config_summary(const ModelConfig& config) {
  return std::to_string(config.layers) + " layers, dim " + std::to_string(config.dim) + ", patch " +
         std::to_string(config.patch_size) + ", " + std::to_string(config.block.size()) + " modules a block";
}

std::string file_name_of(const std::string& path) { return std::filesystem::path(path).filename().string(); }

// The image a view reads: its file's content (or its in-memory pixels).
void add_view_image(const SceneView& view, const std::string& name, RunDigest& digest) {
  // Shown with its file name, so a rank that cannot read it is told which file (its folder may differ by node).
  if (!view.pixels) return digest.add_file(name, view.image_path, file_name_of(view.image_path));
  const Image& image = *view.pixels;
  Canonical c;
  c << int64_t{image.width} << int64_t{image.height};
  for (float v : image.rgb) c << double{v};
  digest.add(name, value_hash(c.text()));
}

void describe_selection(const SceneSelection& s, const std::string& targets_spec, uint64_t seed, RunDigest& digest) {
  const std::vector<int> targets = targets_spec.empty()
                                       ? std::vector<int>{}
                                       : select_views(targets_spec, s.scene, true, s.inputs, seed, "--targets");
  digest.add("the scene's cameras", scene_cameras(s.scene));
  digest.show_last_as(s.scene.name + ", " + std::to_string(s.scene.views.size()) + " views");
  digest.add("the input views", index_list(s.inputs));
  digest.add("the target views", index_list(targets));
  digest.add("the working size", std::to_string(s.height) + "x" + std::to_string(s.width));
  Canonical pose;
  for (double v : s.pose.world) pose << v;
  pose << s.pose.scale << int64_t{static_cast<int>(s.normalization)};
  for (float v : s.background) pose << double{v};
  digest.add("the pose normalisation and background", pose.text());
  digest.show_last_as("as computed on that rank");
  std::set<int> read(s.inputs.begin(), s.inputs.end());
  read.insert(targets.begin(), targets.end());
  for (int i : read)
    if (i >= 0 && static_cast<size_t>(i) < s.scene.views.size())
      add_view_image(s.scene.views[i], "view " + std::to_string(i) + "'s image (its content)", digest);
}

// Several scenes, each evaluated by one rank alone: their cameras and their images' sizes (reading every image
// of every scene on every rank would cost more than the ranks save).
void describe_scene_list(const SceneList& list, RunDigest& digest) {
  std::string names, failed;
  for (const Scene& s : list.scenes) names += s.name + "\n";
  for (const auto& f : list.failed) {  // by folder and file name: the index's folder may differ between nodes
    const std::filesystem::path entry(f.first);
    failed += (entry.parent_path().filename() / entry.filename()).string() + "\n";
  }
  digest.add("the scenes of --data", names);
  digest.show_last_as(std::to_string(list.scenes.size()) + " scenes");
  digest.add("the scenes of --data that fail to read", failed);
  digest.show_last_as(std::to_string(list.failed.size()) + " scenes");
  for (const Scene& s : list.scenes) {
    digest.add("the cameras of scene " + shortened(s.name), scene_cameras(s));
    digest.show_last_as(std::to_string(s.views.size()) + " views");
    std::string sizes, unreadable;  // the first image this rank cannot read, named in the message
    for (const SceneView& v : s.views) {
      std::error_code error;
      const auto bytes = v.pixels ? 0 : std::filesystem::file_size(v.image_path, error);
      sizes += error ? "missing," : std::to_string(bytes) + ",";
      if (unreadable.empty() && !v.pixels && (error || bytes == 0))
        unreadable = ", " + file_name_of(v.image_path) + (error ? " missing" : " empty");
    }
    digest.add("the image sizes of scene " + shortened(s.name), sizes);
    digest.show_last_as(std::to_string(s.views.size()) + " images" + unreadable);
  }
}

// "LENGTH:BYTES" strings one after another: any byte may appear in a name or value.
void put(std::string& out, const std::string& s) { out += std::to_string(s.size()) + ":" + s; }
std::string take(const std::string& in, size_t& at) {
  const size_t colon = in.find(':', at);
  if (colon == std::string::npos || colon == at || colon - at > 12) throw Error("run digest", "malformed");
  unsigned long long length = 0;
  for (size_t i = at; i < colon; ++i) {
    if (in[i] < '0' || in[i] > '9') throw Error("run digest", "malformed");
    length = length * 10 + static_cast<unsigned>(in[i] - '0');
  }
  if (length > in.size() - colon - 1) throw Error("run digest", "malformed");
  at = colon + 1 + static_cast<size_t>(length);
  return in.substr(colon + 1, static_cast<size_t>(length));
}

// The message for a rank whose contribution is not a digest (it failed, or it is at another exchange).
std::string failure_of(const std::string& contribution) {
  if (contribution.rfind(kDigest, 0) == 0) return "";
  if (contribution.rfind(kFailed, 0) == 0) return contribution.substr(std::strlen(kFailed));
  return "is not at the same point of the run (another subcommand, or another version of lact)";
}

}  // namespace

void RunDigest::add(const std::string& name, const std::string& value) {
  fields_.push_back({name, value_hash(value), shortened(value)});
}

void RunDigest::add_file(const std::string& name, const std::string& path, const std::string& label) {
  std::string identity;
  try {
    identity = file_identity(path);
  } catch (const Error&) {
    identity = "cannot be read";  // the same on every rank agrees: the run itself then says why
  }
  fields_.push_back({name, value_hash(identity), shortened(label.empty() ? identity : identity + " (" + label + ")")});
}

void RunDigest::show_last_as(const std::string& shown) {
  if (fields_.empty()) return;
  Field& last = fields_.back();
  // With the start of the value's hash: two values of one summary still show apart.
  last.shown = shortened(shown) + ", hash " + last.hash.substr(last.hash.find(':') + 1, 8);
}

std::string RunDigest::encode() const {
  std::string out;
  for (const Field& f : fields_) put(out, f.name), put(out, f.hash), put(out, f.shown);
  return out;
}

RunDigest RunDigest::decode(const std::string& text) {
  RunDigest digest;
  for (size_t at = 0; at < text.size();) {
    Field f;
    f.name = take(text, at), f.hash = take(text, at), f.shown = take(text, at);
    digest.fields_.push_back(std::move(f));
  }
  return digest;
}

DigestDifference first_difference(const RunDigest& first, const RunDigest& other) {
  const std::vector<RunDigest::Field>&a = first.fields(), &b = other.fields();
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i < a.size() && i < b.size() && a[i].name == b[i].name && a[i].hash == b[i].hash) continue;
    const std::string name = i < a.size() ? a[i].name : b[i].name;
    return {name, i < a.size() ? "'" + a[i].shown + "'" : "nothing",
            i < b.size() && b[i].name == name ? "'" + b[i].shown + "'" : "nothing"};
  }
  return {};
}

std::string digest_difference(const RunDigest& first, const RunDigest& other, int rank, int ranks) {
  const DigestDifference d = first_difference(first, other);
  if (d.name.empty()) return "";
  const std::string who = "ranks disagree: rank " + std::to_string(rank) + " of " + std::to_string(ranks);
  if (d.other == d.first) return who + " differs from rank 0 in " + d.name + " (both begin " + d.first + ")";
  return who + " has " + d.name + " " + d.other + " where rank 0 has " + d.first;
}

void agree_on_run(const Distribution& d, const std::function<void(RunDigest&)>& describe) {
  if (!d.active()) return;
  std::string mine;
  try {
    RunDigest digest;
    describe(digest);
    mine = kDigest + digest.encode();
  } catch (const std::bad_alloc&) {
    mine = std::string(kFailed) + "out of memory";
  } catch (const std::exception& e) {
    mine = kFailed + std::string(*e.what() ? e.what() : "failed");
  }
  const std::vector<std::string> all = d.ranks->all_gather_text(mine);
  std::vector<std::string> failures;
  for (const std::string& contribution : all) failures.push_back(failure_of(contribution));
  throw_agreed_failure(failures, d.rank());
  const RunDigest first = RunDigest::decode(all[0].substr(std::strlen(kDigest)));
  for (size_t r = 1; r < all.size(); ++r) {
    const std::string difference =
        digest_difference(first, RunDigest::decode(all[r].substr(std::strlen(kDigest))), static_cast<int>(r), d.size());
    if (!difference.empty()) throw RankFailure(difference, d.rank() == 0);
  }
}

void describe_inputs(const RunInputs& in, RunDigest& digest) {
  if (in.model) {
    digest.add("the model's config",
               in.model->config().source.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    digest.show_last_as(config_summary(in.model->config()));
    digest.add_file("the model (its content)", in.model_path);
  }
  if (!in.state_path.empty()) digest.add_file("--state (its content)", in.state_path);
  if (!in.camera_path.empty()) digest.add_file("--path (its content)", in.camera_path);
  if (!in.lpips_path.empty()) digest.add_file("the LPIPS weights (their content)", in.lpips_path);
  if (in.scenes) describe_scene_list(*in.scenes, digest);
  if (in.selection) describe_selection(*in.selection, in.targets_spec, in.seed, digest);
}

void agree_on_inputs(const Distribution& d, const RunInputs& inputs) {
  agree_on_run(d, [&](RunDigest& digest) { describe_inputs(inputs, digest); });
}

Distribution start_agreed_ranks(const CommonOptions& options, const RunDigest& command_line) {
  Distribution d;
  const DistributedMode mode = parse_distributed_mode(options.distributed);
  if (mode == DistributedMode::None) {
    // One of several processes of a launcher that runs alone would do the whole job beside the others (and
    // leave the ranks that do pass --distributed waiting for it).
    if (const int processes = launched_processes(); processes > 1)
      throw Error("--distributed", "this is one of " + std::to_string(processes) +
                                       " processes of an MPI launch (mpirun, srun), but --distributed is none: pass "
                                       "--distributed mpi (or nccl) to every rank, or run lact without the launcher");
    return d;
  }
  d.ranks = &start_ranks(mode);
  static bool agreed = false;  // the first exchange of the run, once per process
  if (!agreed) {
    agreed = true;
    agree_on_run(d, [&](RunDigest& digest) { digest = command_line; });
  }
  return d;
}

}  // namespace lact
