"""Python threads rendering from one model at once get what one thread gets, and on the CPU their renders run in the
engine at the same time; repeated calls do not leak."""
import threading

import numpy as np

from conftest import encode_inputs


def test_two_threads_render_what_one_renders(model, scene):
    state = encode_inputs(model, scene)
    t = scene.targets
    reference = model.render(state, scene.intrinsics[t], scene.c2w[t])
    results, errors = [[], []], []

    def work(slot):
        try:
            for _ in range(20):
                results[slot].append(model.render(state, scene.intrinsics[t], scene.c2w[t]))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for images in results[0] + results[1]:
        np.testing.assert_array_equal(images, reference)


def test_renders_from_four_threads_run_at_once_and_equal_serial_ones(lact, scene):
    import os
    from conftest import FIXTURE
    model = lact.Model(os.path.join(FIXTURE, "model.safetensors"), threads=1)  # one CPU thread per render
    state = encode_inputs(model, scene)
    t = np.resize(scene.targets, 8)
    work = [(scene.intrinsics[t] * (1 + 0.05 * k), scene.c2w[t]) for k in range(4)]  # four different camera sets
    serial = [model.render(state, k, c) for k, c in work]
    assert model._most_renders_at_once == 1
    start = threading.Barrier(len(work))
    results, errors = [None] * len(work), []

    def render(slot):
        try:
            start.wait()
            for _ in range(10):
                results[slot] = model.render(state, *work[slot])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=render, args=(k,)) for k in range(len(work))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for got, expected in zip(results, serial):
        np.testing.assert_array_equal(got, expected)
    assert model._most_renders_at_once >= 2  # they ran in the engine together, not one after another


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def test_500_calls_do_not_grow_memory(model, scene):
    t = scene.targets

    def call():
        state = encode_inputs(model, scene)
        model.render(state, scene.intrinsics[t], scene.c2w[t])

    for _ in range(20):  # warm-up: allocator pools, OpenMP threads
        call()
    before = rss_kib()
    for _ in range(500):
        call()
    grown = rss_kib() - before
    print("RSS growth over 500 encode+render calls: %d KiB" % grown)
    assert grown < 8 * 1024, grown  # one leaked state or image per call would be > 50 MiB
