// What `lact serve` is asked to do: the scene (as `lact view`'s flags, session/scene_options.h), where to listen,
// and the bounds on what a client may ask (docs/guide/serve.md: the security model).
#pragma once

#include <string>
#include <vector>

#include "session/scene_options.h"

namespace lact::serve {

struct ServeOptions : session::SceneOptions {
  ServeOptions() { command = "serve"; }
  int port = 8080;
  std::string bind = "127.0.0.1";   // loopback by default: ssh -L brings the page to a laptop
  std::string token;                // empty: generated (unless no_token)
  bool no_token = false;            // only with a loopback bind
  int max_clients = 8;              // open WebSocket streams; the next is refused with a clear message
  int max_side = 0;                 // largest rendered side a client may ask (pixels); 0: kPageSizeFactor x the
                                    // scenes' largest working side
  double max_rate = 120;            // messages and API requests per second per connection (a burst of 2 s)
  std::string out = "serve_out";    // videos rendered on the server go here (created with the first job)
  int max_video_frames = 2000;      // frames of one video job
  int max_video_jobs = 4;           // video jobs queued or rendering, all clients together
  double max_video_seconds = 3600;  // a video job rendering longer fails
  // Side b (serve/compare_side.h): the same inputs encoded by this model, or this second state of the scene.
  std::string compare_model, compare_state;
  // Many scenes (serve/served_scenes.h): several --state files (then `state` stays empty), and the bound on the
  // scene states held in memory (GiB).
  std::vector<std::string> states;
  double cache_memory_gb = 4;
};

}  // namespace lact::serve
