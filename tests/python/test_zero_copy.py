"""Zero copy: a C-contiguous float32 input reaches the encoder where it lies (the engine's count of input pixel bytes
copied does not move and numpy allocates nothing), and render writes its images once, into one new array or into
the caller's `out=`, with the same values as before."""
import tracemalloc

import numpy as np
import pytest

from conftest import encode_inputs


def large_inputs(scene, factor=8):
    """The fixture's input views upsampled by `factor` (256x384: 3.5 MB of pixels) with intrinsics to match."""
    i = scene.inputs
    images = np.ascontiguousarray(np.repeat(np.repeat(scene.images[i], factor, axis=1), factor, axis=2))
    return images, scene.intrinsics[i] * factor, scene.c2w[i]


def traced_peak(call):
    """(result, bytes numpy allocated at most during call()): tracemalloc sees numpy's array buffers."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = call()
        return result, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_c_contiguous_input_reaches_the_encoder_uncopied(lact, model, scene):
    images, intrinsics, c2w = large_inputs(scene)
    before = lact._input_pixel_bytes_copied()
    state, numpy_bytes = traced_peak(lambda: model.encode(images, intrinsics, c2w))
    assert lact._input_pixel_bytes_copied() == before  # the engine read the array's own buffer
    assert numpy_bytes < images.nbytes / 10, numpy_bytes
    # The same pixels through a converted copy (Fortran order: numpy converts once) encode to the same state.
    copied = model.encode(np.asfortranarray(images), intrinsics, c2w)
    t = scene.targets
    np.testing.assert_array_equal(model.render(state, scene.intrinsics[t] * 8, scene.c2w[t], size=(256, 384)),
                                  model.render(copied, scene.intrinsics[t] * 8, scene.c2w[t], size=(256, 384)))


def test_render_allocates_its_result_once(model, scene):
    state = encode_inputs(model, scene)
    t = np.resize(scene.targets, 16)  # 16 cameras at 256x384: 18.9 MB of images
    images, numpy_bytes = traced_peak(
        lambda: model.render(state, scene.intrinsics[t] * 8, scene.c2w[t], size=(256, 384)))
    assert images.shape == (16, 256, 384, 3) and images.flags.c_contiguous and images.flags.owndata
    assert images.nbytes <= numpy_bytes < 1.1 * images.nbytes, (numpy_bytes, images.nbytes)


def test_render_writes_into_out(model, scene):
    state = encode_inputs(model, scene)
    t = scene.targets
    reference = model.render(state, scene.intrinsics[t], scene.c2w[t])
    out = np.full(reference.shape, -1, np.float32)
    result = model.render(state, scene.intrinsics[t], scene.c2w[t], out=out)
    assert result is out
    np.testing.assert_array_equal(out, reference)
    one = np.empty(reference.shape[1:], np.float32)
    assert model.render(state, scene.intrinsics[t[1]], scene.c2w[t[1]], out=one) is one
    np.testing.assert_array_equal(one, reference[1])
    # A row of a larger C-contiguous array is written in place too.
    rows = np.zeros((4,) + reference.shape, np.float32)
    model.render(state, scene.intrinsics[t], scene.c2w[t], out=rows[2])
    np.testing.assert_array_equal(rows[2], reference)
    assert not rows[[0, 1, 3]].any()


def test_a_wrong_out_is_refused_naming_it(model, scene):
    state = encode_inputs(model, scene)
    t = scene.targets
    shape = (len(t),) + tuple(state.size) + (3,)
    with pytest.raises(TypeError, match="out: expected a float32 numpy array, got dtype float64"):
        model.render(state, scene.intrinsics[t], scene.c2w[t], out=np.empty(shape))
    with pytest.raises(TypeError, match="out: expected a float32 numpy array"):
        model.render(state, scene.intrinsics[t], scene.c2w[t], out=[0.0])
    with pytest.raises(ValueError, match=r"out: expected shape \(2, 32, 48, 3\), got \(2, 32, 48, 4\)"):
        model.render(state, scene.intrinsics[t], scene.c2w[t], out=np.empty(shape[:3] + (4,), np.float32))
    with pytest.raises(ValueError, match="out: expected a C-contiguous writeable array"):
        model.render(state, scene.intrinsics[t], scene.c2w[t], out=np.asfortranarray(np.empty(shape, np.float32)))
    read_only = np.empty(shape, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="out: expected a C-contiguous writeable array"):
        model.render(state, scene.intrinsics[t], scene.c2w[t], out=read_only)
