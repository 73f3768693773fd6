"""A fake COLMAP for lact import's tests (tests/cli/import_test.py, tests/reliability/data_loss_test.py): a Python
script written first on PATH as `colmap`, which writes a model in COLMAP's text format for the photos it was given
(each camera 0.1 apart on x, identity rotation) and misbehaves on request (FAKE_COLMAP: crash, few, no_pair, unplaced, ...); and small
photos to import."""
import os

from PIL import Image

FAKE_COLMAP = r'''
import os, shutil, signal, sys, time
command, args = sys.argv[1], dict(zip(sys.argv[2::2], sys.argv[3::2]))
mode = os.environ.get("FAKE_COLMAP", "good")
with open(os.path.join(os.environ["PIDS"], "colmap." + command), "w") as f:
    f.write("%d\n%s\n" % (os.getpid(), " ".join(sys.argv[2:])))

def flood(megabytes):  # output without a line break, a megabyte at a time
    for _ in range(megabytes):
        sys.stdout.buffer.write(b"x" * (1 << 20))

def write_model(folder, names, size):
    os.makedirs(folder)
    w, h = size
    if mode == "ghost":  # registers an image that is not in images/
        names = names + ["ghost.jpg"]
    with open(os.path.join(folder, "cameras.txt"), "w") as f:
        if mode == "fov_model":  # a lens model lact does not read
            f.write("1 FOV %d %d %g %g %g %g 0.5\n" % (w, h, 0.9 * w, 0.9 * w, w / 2, h / 2))
        else:
            focal = -0.9 * w if mode == "negative_focal" else 0.9 * w
            f.write("1 SIMPLE_RADIAL %d %d %g %g %g 0.01\n" % (w, h, focal, w / 2, h / 2))
    with open(os.path.join(folder, "images.txt"), "w") as f:
        for i, name in enumerate(names):
            q = "0 0 0 0" if mode == "zero_quaternion" and i == 1 else "1 0 0 0"
            t = "1e308 0 0" if mode == "far" and i == 1 else "%g 0 0" % (-0.1 * i)
            f.write("%d %s %s 1 %s\n\n" % (i + 1, q, t, name))
    open(os.path.join(folder, "points3D.txt"), "w").close()
    if os.environ.get("FAKE_KEEP"):  # a copy for the test to hand to lact's reader
        shutil.copytree(folder, os.path.join(os.environ["FAKE_KEEP"], "sparse", "0"))

if command == "feature_extractor":
    names = sorted(os.listdir(args["--image_path"]))
    if os.environ.get("FAKE_RUNS"):  # every run (one per camera group), a line each
        with open(os.environ["FAKE_RUNS"], "a") as f:
            f.write(" ".join(sys.argv[2:]) + "\n")
    if "--image_list_path" in args:  # as COLMAP: only the listed images, added to the database
        with open(args["--image_list_path"]) as f:
            names = [n for n in f.read().split("\n") if n]
        if os.path.exists(args["--database_path"]):
            with open(args["--database_path"]) as f:
                names = f.read().split("\n") + names
    if mode == "silent":
        time.sleep(600)
    if mode == "huge_line":
        print("Processed file [" + "7" * 200000 + "/%d]" % len(names), flush=True)
    if mode == "odd_numbers":
        print("Processed file [99999999999/%d]" % len(names), flush=True)
        print("Matching block [2/99999, 3/99999]", flush=True)
    if mode == "flood":
        flood(int(os.environ.get("FAKE_FLOOD_MB", "100")))
        print(flush=True)
    for i, name in enumerate(names):
        print("Processed file [%d/%d]" % (i + 1, len(names)), flush=True)
        if mode == "disk_full" and i >= 2:  # COLMAP 3.8 logs a lost write and goes on, exit status 0
            print("SQLite error [./src/base/database.cc, line 989]: disk I/O error", flush=True)
        if mode == "slow":
            time.sleep(600)
        time.sleep(0.02)
    with open(args["--database_path"], "w") as f:
        f.write("\n".join(names))
elif command.endswith("_matcher"):
    if mode == "crash":
        print("F1204 matching.cc:42] Check failed: fake crash", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
elif command == "mapper":
    with open(args["--database_path"]) as f:
        names = f.read().split("\n")
    size = [int(v) for v in os.environ["FAKE_SIZE"].split()]
    if mode == "no_pair":  # COLMAP 3.8's mapper when no two photos make a start
        print("Finding good initial image pair\n\n  => No good initial image pair found.\n")
        print("ERROR: failed to create sparse model", file=sys.stderr)
        sys.exit(1)
    registered = names[:2] if mode == "few" else names
    if mode == "unplaced":  # every third photo not registered
        registered = [n for i, n in enumerate(names) if i % 3 != 2]
    if mode == "split":
        write_model(os.path.join(args["--output_path"], "0"), registered[:3], size)
        write_model(os.path.join(args["--output_path"], "1"), registered, size)
    else:
        write_model(os.path.join(args["--output_path"], "0"), registered, size)
    for i in range(len(registered)):
        print("Registering image #%d (%d)" % (i + 1, i + 1))
elif command == "model_analyzer":
    if mode == "flood":
        flood(int(os.environ.get("FAKE_FLOOD_MB", "100")))
        print()
    print("Mean reprojection error: %s" % ("1e999px" if mode == "odd_numbers" else "0.4321px"))
'''


def make_photos(folder, count, size=(96, 64)):
    os.makedirs(folder, exist_ok=True)
    for i in range(count):
        image = Image.new("RGB", size, (40 * i % 256, 90, 160))
        image.putpixel((i % size[0], 3), (255, 255, 255))
        image.save(os.path.join(folder, "p%02d.jpg" % i), quality=95)
