"""Ctrl-C (SIGINT) stops a long encode between layers: the signal handler's exception comes out of encode."""
import os
import signal
import threading
import time

import numpy as np
import pytest


class Stop(Exception):
    pass


def interrupted_by_a_watcher(render, sends_sigint, release, handler, expected):
    """Runs `render()` while a thread runs `sends_sigint()` (it waits for its moment, then sends SIGINT) with
    `handler` installed for SIGINT; `expected` must come out of it. `release()` ends a watch still waiting.
    Returns whether render() returned (it must not: the signal was then handled only after it)."""
    previous = signal.signal(signal.SIGINT, handler)
    watcher = threading.Thread(target=sends_sigint)
    finished = False
    try:
        with pytest.raises(expected):
            watcher.start()
            render()
            finished = True
            watcher.join()  # a signal that came after the render lands here
    finally:
        release()
        watcher.join()
        signal.signal(signal.SIGINT, previous)
    return finished


def test_sigint_stops_a_long_encode(model, scene):
    i = scene.inputs
    images = np.ascontiguousarray(np.tile(scene.images[i], (2, 8, 8, 1)))  # 6 views at 256x384
    intrinsics, c2w = np.tile(scene.intrinsics[i] * 8, (2, 1)), np.tile(scene.c2w[i], (2, 1, 1))
    model.encode(images, intrinsics, c2w)  # warm-up: first-call allocations
    start = time.perf_counter()
    model.encode(images, intrinsics, c2w)
    full = time.perf_counter() - start

    def stop(signum, frame):
        raise Stop()

    previous = signal.signal(signal.SIGINT, stop)
    timer = threading.Timer(full * 0.1, lambda: os.kill(os.getpid(), signal.SIGINT))
    finished = False
    try:
        with pytest.raises(Stop):
            timer.start()
            start = time.perf_counter()
            model.encode(images, intrinsics, c2w)
            finished = True
            time.sleep(full)  # a signal that came after the encode lands here
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    stopped = time.perf_counter() - start
    print("encode %.2f s; interrupted after %.2f s" % (full, stopped))
    assert not finished, "the signal was only handled after encode returned"
    assert stopped < full
    # the model still works after an interrupted encode
    state = model.encode(scene.images[i], scene.intrinsics[i], scene.c2w[i])
    assert model.render(state, scene.intrinsics[3], scene.c2w[3]).shape == (32, 48, 3)


def test_sigint_stops_a_long_render_between_batches(model, scene):
    # Before: render ran all its cameras and the signal was only handled once it returned (every image written).
    state = model.encode(scene.images[scene.inputs], scene.intrinsics[scene.inputs], scene.c2w[scene.inputs])
    cameras = 4000  # 32x48 views: many batches of the token tile
    intrinsics, c2w = np.repeat(scene.intrinsics[3:4], cameras, 0), np.repeat(scene.c2w[3:4], cameras, 0)
    out = np.full((cameras, 32, 48, 3), -1, np.float32)
    first_written = threading.Event()

    def signal_once_the_first_batch_is_out():  # render releases the GIL: this thread watches `out` meanwhile
        while out[0, 0, 0, 0] == -1 and not first_written.is_set():
            time.sleep(0.001)
        first_written.set()
        os.kill(os.getpid(), signal.SIGINT)

    def stop(signum, frame):
        raise Stop()

    finished = interrupted_by_a_watcher(lambda: model.render(state, intrinsics, c2w, out=out),
                                        signal_once_the_first_batch_is_out, first_written.set, stop, Stop)
    assert not finished, "the signal was only handled after render returned"
    written = int(np.count_nonzero(out[:, 0, 0, 0] != -1))
    print("render stopped after %d of %d images" % (written, cameras))
    assert 0 < written < cameras
    assert np.all(out[written:] == -1)  # nothing after the batch it stopped at
    # the model still renders what it rendered before, and the images written are those
    again = model.render(state, intrinsics[:written], c2w[:written])
    np.testing.assert_array_equal(out[:written], again)


def test_sigint_stops_a_long_single_view_render_between_layers(model, scene):
    # Before: one view is one batch, and the signal was only handled once the whole view was rendered.
    state = model.encode(scene.images[scene.inputs], scene.intrinsics[scene.inputs], scene.c2w[scene.inputs])
    scale = 24  # 768x1152: a layer takes long enough for the signal to come during the first
    intrinsics, c2w, size = scene.intrinsics[3] * scale, scene.c2w[3], (32 * scale, 48 * scale)
    whole = model.render(state, intrinsics, c2w, size=size)  # uninterrupted (and the first-call allocations)
    layers = model.config["layers"]
    assert layers >= 2 and model._render_layers_done == layers  # the finished view's batch: every layer
    out = np.full(size + (3,), -1, np.float32)
    inside = threading.Event()

    def signal_once_the_render_is_inside():  # render releases the GIL: this thread watches the engine meanwhile
        while model._calls_inside == 0 and not inside.is_set():
            time.sleep(0.001)
        inside.set()
        os.kill(os.getpid(), signal.SIGINT)

    finished = interrupted_by_a_watcher(lambda: model.render(state, intrinsics, c2w, size=size, out=out),
                                        signal_once_the_render_is_inside, inside.set, signal.default_int_handler,
                                        KeyboardInterrupt)
    assert not finished, "the signal was only handled after render returned"
    done = model._render_layers_done
    print("render of one %dx%d view stopped with %d of %d layers done" % (size + (done, layers)))
    assert done < layers  # its batch (the view) stopped before its last layer
    assert np.all(out == -1)  # the view was not finished, so nothing is written
    assert model._calls_inside == 0
    # the model and the state still render the view, bit for bit as the uninterrupted render
    np.testing.assert_array_equal(model.render(state, intrinsics, c2w, size=size), whole)
