// The session parts (session/: scene source, encode job, render thread, camera, statistics, path recorder,
// 8-bit images, the rules for names typed in the window) the desktop viewer is built on, by the names the viewer's
// files use. `lact serve` uses the same.
#pragma once

#include "session/camera_controller.h"
#include "session/encode_job.h"
#include "session/frame_stats.h"
#include "session/path_recorder.h"
#include "session/pixels.h"
#include "session/render_thread.h"
#include "session/scene_source.h"
#include "session/typed_outputs.h"

namespace lact::viewer {

using session::CameraController;
using session::cameras_frame;
using session::EncodeJob;
using session::flip_rows;
using session::FrameStats;
using session::IntervalTotals;
using session::open_scene_source;
using session::PathRecorder;
using session::render_threads;
using session::RenderedView;
using session::RenderRequest;
using session::RenderThread;
using session::Rgb8;
using session::same_camera;
using session::scaled_camera;
using session::scene_frame;
using session::SceneFrame;
using session::SceneSource;
using session::session_inputs;
using session::to_rgb8;
using session::TypedOutputs;
using session::write_png;

}  // namespace lact::viewer
