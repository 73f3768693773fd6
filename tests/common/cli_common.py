"""What the CLI test files share: the fixture base class, a lact run's result checked the same way everywhere,
and safetensors files read and written by hand (8-byte little-endian header length, the JSON header, the data).

A result is (returncode, stdout, stderr), as each file's run() returns it. The test files find this module through
PYTHONPATH (tests/CMakeLists.txt sets it to tests/common and the repository root for every Python test).
"""
import json
import os
import pty
import select
import struct
import subprocess
import tempfile
import unittest

# The repository's root (this file is tests/common/cli_common.py).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class FixtureCase(unittest.TestCase):
    """The base of every test class that runs lact on the parity fixture: the fixture's paths (fx, model, scene,
    index, cameras) and a temporary folder (tmp) of the class's own, removed after its tests. The fixture is the
    one given by --fixture (parse_cli_args or use_fixture); a class that needs another sets `fixture_option`."""
    fixture = None
    fixture_option = "fixture"
    fixtures = {}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        folder = FixtureCase.fixtures.get(cls.fixture_option)
        if folder:
            cls.fx = os.path.abspath(folder)
            cls.model = os.path.join(cls.fx, "model.safetensors")
            cls.scene = os.path.join(cls.fx, "scene")
            cls.index = os.path.join(cls.fx, "index.json")
            cls.cameras = os.path.join(cls.fx, "scene", "opencv_cameras.json")
        cls._tmp = tempfile.TemporaryDirectory(prefix="lact_%s_" % cls.__name__.lower())
        cls.tmp = cls._tmp.name

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()
        super().tearDownClass()


def use_fixture(folder, option="fixture"):
    """Names the fixture folder FixtureCase classes with this `fixture_option` use."""
    FixtureCase.fixtures[option] = folder

# Text that must never be in lact's stderr: an exception escaping, a crash, a sanitizer report.
CRASH_MARKERS = ("Traceback", "terminate called", "what():", "Segmentation", "AddressSanitizer", "runtime error")


def ran_ok(result):
    """Asserts that lact succeeded (no UBSan report either, for the sanitizer build); returns its stdout."""
    rc, so, se = result
    assert rc == 0, "lact failed (rc %d): %s%s" % (rc, so, se)
    assert "runtime error" not in se, se
    return so


def alive(pid):
    """Whether process `pid` still runs (a zombie or a dead one does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def one_error_line(test, result, names=(), forbidden=()):
    """Asserts the promise for bad input: exit 1 and exactly one stderr line, starting "lact: ", naming each of
    `names`, with no crash marker and none of `forbidden` in stderr. Returns the line."""
    rc, so, se = result
    lines = se.strip().splitlines()
    msg = "rc=%d stdout=%r stderr=%r" % (rc, so[-500:], se[-2000:])
    test.assertEqual(rc, 1, msg)
    test.assertEqual(len(lines), 1, msg)
    test.assertTrue(lines[0].startswith("lact: "), msg)
    for bad in CRASH_MARKERS + tuple(forbidden):
        test.assertNotIn(bad, se, msg)
    for name in names:
        test.assertIn(name, lines[0], msg)
    return lines[0]


def read_safetensors(path):
    """(header, data) of a safetensors file."""
    with open(path, "rb") as f:
        blob = f.read()
    (length,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8:8 + length]), blob[8 + length:]


def write_safetensors(path, header, data):
    head = json.dumps(header).encode()
    head += b" " * ((-len(head)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + data)


def scaled_model(source, target, factor):
    """The same shapes and metadata, every F32 weight times `factor`: another model lact cannot tell by shape."""
    import array
    header, data = read_safetensors(source)
    data = bytearray(data)
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        begin, end = entry["data_offsets"]
        values = array.array("f", bytes(data[begin:end]))
        data[begin:end] = array.array("f", (v * factor for v in values)).tobytes()
    write_safetensors(target, header, bytes(data))


def parse_cli_args(description, fixture_required=True):
    """The options each CLI test file is registered with (tests/cli/, tests/reliability/ ...): --lact, --fixture,
    --tools, --data. Returns (args, the arguments left for unittest); --lact made absolute."""
    import argparse
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--lact", required=True)
    parser.add_argument("--fixture", required=fixture_required)
    parser.add_argument("--tools")
    parser.add_argument("--data")
    args, rest = parser.parse_known_args()
    args.lact = os.path.abspath(args.lact)
    use_fixture(args.fixture)
    # lact keeps the rates its time estimates read in $XDG_CACHE_HOME/lact (pipeline/rate_cache.h): the tests keep
    # theirs in a folder of their own, never in the user's ~/.cache.
    import atexit
    import shutil
    cache = tempfile.mkdtemp(prefix="lact_test_cache_")
    atexit.register(shutil.rmtree, cache, True)
    os.environ["XDG_CACHE_HOME"] = cache
    return args, rest


def run_on_a_pty(command, timeout=120):
    """(exit code, every byte shown) of `command` with stdin, stdout and stderr on a pseudo-terminal; an
    AssertionError when it shows nothing for `timeout` seconds."""
    master, slave = pty.openpty()
    p = subprocess.Popen([a if isinstance(a, (str, bytes)) else str(a) for a in command], stdin=slave, stdout=slave,
                         stderr=slave)
    os.close(slave)
    shown = b""
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            p.kill()
            raise AssertionError("no output for %d s: %r" % (timeout, shown[-500:]))
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return p.wait(timeout=60), shown
