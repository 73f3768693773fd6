// lact serve: the viewer in a web browser (serve/, docs/guide/serve.md), for GPU machines without a display. Encodes a
// scene (or opens an encoded state) once and serves the page, the frame stream and the HTTP API. When it is not
// built (no Boost.Beast or libjpeg at configure time) the command still exists and says what is missing.
#include "app/commands.h"
#include "app/flags.h"
#include "system/error.h"

#ifdef LACT_WITH_SERVE
#include "serve/server.h"
#endif

namespace lact::app {

#ifdef LACT_WITH_SERVE

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<serve::ServeOptions>();
  CLI::App* command = app.add_subcommand(
      "serve",
      "The viewer in a web browser: encode the input views (or open a saved --state) once, then serve a page that "
      "streams novel views as you orbit, pan, zoom and fly (ssh -L 8080:localhost:8080 host, then open the URL)");
  add_scene_source_options(*command, *o, &o->states);
  command->add_option("--port", o->port, "TCP port (0: any free one)")->capture_default_str();
  command->add_option("--bind", o->bind, "Address to listen on (0.0.0.0: every interface; the token then matters)")
      ->capture_default_str();
  command->add_option("--token", o->token, "The token the URL carries (default: a random one, printed)");
  command->add_flag("--no-token", o->no_token, "No token (only with a loopback --bind)");
  command->add_option("--max-clients", o->max_clients, "Browser streams at once; the next one is refused")
      ->capture_default_str();
  command->add_option("--max-side", o->max_side,
                      "Largest frame side a client may ask for (pixels; default: 4x the working size's longer side, "
                      "the largest the page offers)");
  command->add_option("--max-rate", o->max_rate, "Messages or requests per second per connection")
      ->capture_default_str();
  command
      ->add_option("--out", o->out,
                   "Folder for what the server writes (created with the first): the videos clients render, the "
                   "paths they save (paths/) and, serving several scenes, their encoded states (states/)")
      ->capture_default_str();
  command->add_option("--max-video-frames", o->max_video_frames, "Frames of one video job")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  command->add_option("--max-video-jobs", o->max_video_jobs, "Video jobs queued or rendering, all clients together")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  command->add_option("--max-video-seconds", o->max_video_seconds, "A video job rendering longer fails")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  command->add_option("--compare-model", o->compare_model,
                      "Side b: the same inputs encoded by this second model too, shown beside the first");
  command->add_option("--compare-state", o->compare_state,
                      "Side b: this second encoded state of the same scene, shown beside the first");
  command
      ->add_option("--cache-memory", o->cache_memory_gb,
                   "GB of scene states kept in memory when serving many scenes (--data with several, or several "
                   "--state): the least recently used are released, read back from their state files")
      ->capture_default_str();
  add_common_options(*command, o->common);
  command->callback([o]() {
    if (o->states.size() == 1) o->state = o->states[0], o->states.clear();  // one scene, as lact view's --state
    serve::run_server(*o);
  });
}

#else

void add_serve_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("serve", "The viewer in a web browser (not built: " LACT_SERVE_MISSING ")");
  command->allow_extras();
  command->callback([]() { throw Error("lact serve is not built (" LACT_SERVE_MISSING ")"); });
}

#endif

}  // namespace lact::app
