"""Ctrl-C (SIGINT) stops a long encode between layers: the signal handler's exception comes out of encode."""
import os
import signal
import threading
import time

import numpy as np
import pytest


class Stop(Exception):
    pass


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
