#!/usr/bin/env python3
"""The written rules that run (CONTRIBUTING.md): every tracked C++ file formatted with the project's
.clang-format, no engine function over 80 lines, no include from a floor to a higher one.

Usage: python3 tools/check_style.py [--fix]   (from anywhere inside the checkout; --fix formats in place)
Exit 0 when every rule holds; otherwise one line per finding and exit 1.
"""
import argparse
import json
import os
import re
import subprocess
import sys

CXX_SUFFIXES = (".cpp", ".h", ".cu", ".cuh")
# The floors of docs/design/architecture.md: a file may include its own folder or a lower floor, never a higher one,
# and never another folder of its own floor (the viewer, the web viewer, the Python module and the bench stand side by
# side under the command line, the viewers on the session they share; the import stands beside the session).
FLOORS = {"system": 0, "kernels": 1, "core": 2, "datasets": 3, "distributed": 3, "pipeline": 4, "session": 5, "import": 5,
          "viewer": 6, "serve": 6, "python": 6, "bench": 6, "app": 7}
MAX_FUNCTION_LINES = 80
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
WARNING = re.compile(r"^(\S+):\d+:\d+: warning:")  # clang-format --dry-run names each file it would change


def tracked_cxx_files(root):
    out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    return sorted(p for p in out.decode().split("\0") if p.endswith(CXX_SUFFIXES))


def unformatted(root, files, fix):
    """Files clang-format would change (formatted in place with fix)."""
    bad = []
    for i in range(0, len(files), 50):
        batch = files[i:i + 50]
        if fix:
            subprocess.run(["clang-format", "-i", "--style=file"] + batch, cwd=root, check=True)
            continue
        p = subprocess.run(["clang-format", "--dry-run", "--style=file"] + batch, cwd=root, capture_output=True,
                           text=True)
        bad += sorted({m.group(1) for m in map(WARNING.match, p.stderr.splitlines()) if m and m.group(1) in batch})
    return bad


def long_functions(root, files):
    """(file, line, name, lines) of every function definition over the limit, by universal-ctags' end lines."""
    engine = [f for f in files if f.split("/", 1)[0] in FLOORS or f.startswith("tools/")]
    p = subprocess.run(["ctags", "--output-format=json", "--fields=+ne", "--kinds-C++=f", "--kinds-C=f",
                        "--language-force=C++", "-f", "-"] + engine, cwd=root, capture_output=True, text=True,
                       check=True)
    found = []
    for line in p.stdout.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or "end" not in tag:
            continue
        length = tag["end"] - tag["line"] + 1
        if length > MAX_FUNCTION_LINES:
            found.append((tag["path"], tag["line"], tag["name"], length))
    return found


def includes_up(root, files):
    """(file, line, included) of every include that runs up a floor or across one."""
    found = []
    for path in files:
        folder = path.split("/", 1)[0]
        if folder not in FLOORS:
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for number, text in enumerate(f, 1):
                m = INCLUDE.match(text)
                if not m or "/" not in m.group(1):
                    continue
                target = m.group(1).split("/", 1)[0]
                if target in FLOORS and target != folder and FLOORS[target] >= FLOORS[folder]:
                    found.append((path, number, m.group(1)))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fix", action="store_true", help="format the files in place instead of reporting them")
    args = parser.parse_args()
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.abspath(__file__)))
    if top.returncode != 0:
        print("check_style: %s is not inside a git checkout (the rules apply to the tracked files)" % __file__)
        return 2
    root = top.stdout.strip()
    files = tracked_cxx_files(root)
    problems = ["%s: not formatted (clang-format -i %s)" % (f, f) for f in unformatted(root, files, args.fix)]
    problems += ["%s:%d: %s is %d lines (at most %d)" % (f, n, name, length, MAX_FUNCTION_LINES)
                 for f, n, name, length in long_functions(root, files)]
    problems += ["%s:%d: includes %s, a higher floor (docs/design/architecture.md)" % t for t in includes_up(root, files)]
    for line in problems:
        print("check_style: " + line)
    if problems:
        return 1
    print("check_style: %d C++ files formatted, no function over %d lines, no include up a floor" %
          (len(files), MAX_FUNCTION_LINES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
