"""Two Python threads rendering from one model at once get what one thread gets; repeated calls do not leak."""
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
