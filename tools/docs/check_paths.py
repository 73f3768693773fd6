"""Every repository path a Markdown file names in backquotes exists (issue 50 step 7: every page true to the code).

A backquoted word is taken as a path when it holds a '/' and starts with a top-level file or folder of the
checkout (`system/file_io.h`, `kernels/cuda/`, `docs/bench/bench_cpu_l6_d256.md`); it passes when it names a
tracked file or folder, a tracked file without its extension (`pipeline/run_work`), or, for a pattern, at least
one tracked file: `{a,b}` lists are expanded, `*` and `<...>` match any part of a name and a word in capitals is a
placeholder (`core/kinds/NAME_kind.cpp`). Paths git ignores (build outputs, `tools/train/carry/`) are not checked.
Code blocks are skipped (their paths are commands' arguments, often made by the command).

    python3 tools/docs/check_paths.py [ROOT]     # prints each missing path as FILE:LINE, exits 1 if any
"""
import fnmatch
import os
import re
import subprocess
import sys

BACKQUOTED = re.compile(r"`([^`\s]+)`")
PLACEHOLDER = re.compile(r"<[^>]*>|(?<![A-Za-z0-9])[A-Z][A-Z0-9]+(?![a-z0-9])")


def git_lines(root, *args):
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


def ignored_paths(root, paths):
    """Those of `paths` git ignores (check-ignore exits 1 when it ignores none of them)."""
    out = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-z"], cwd=root, capture_output=True,
                         input="\0".join(paths).encode()).stdout
    return [p for p in out.decode().split("\0") if p]


def expand_braces(word):
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    return [x for part in m.group(1).split(",") for x in expand_braces(word[:m.start()] + part + word[m.end():])]


def candidate(word, tops):
    """The path part of a backquoted word, or None when it is no path into the checkout."""
    word = word.rstrip(".,:;")
    word = re.split(r"::|\(|:(?=\d|[A-Za-z_]+$)", word)[0]  # a function, a line number, a symbol after it
    if "/" not in word or "=" in word or word.startswith(("/", "-", "$", "~", ".", "http")):
        return None
    return word if word.split("/", 1)[0] in tops else None


def exists(path, tracked, folders, stems):
    path = path.rstrip("/")
    if path in tracked or path in folders or path in stems:
        return True
    pattern = PLACEHOLDER.sub("*", path)
    if "*" not in pattern:
        return False
    return any(fnmatch.fnmatchcase(f, pattern) or fnmatch.fnmatchcase(f, pattern + "/*") for f in tracked)


def missing_paths(root):
    tracked = set(git_lines(root, "ls-files", "-z"))
    folders = {f.rsplit("/", i)[0] for f in tracked for i in range(1, f.count("/") + 1)}
    stems = {os.path.splitext(f)[0] for f in tracked}
    tops = {f.split("/", 1)[0] for f in tracked}
    found = []
    for page in sorted(f for f in tracked if f.endswith(".md")):
        in_code = False
        with open(os.path.join(root, page), encoding="utf-8") as text:
            for number, line in enumerate(text, 1):
                if line.lstrip().startswith("```"):
                    in_code = not in_code
                    continue
                if in_code:
                    continue
                for m in BACKQUOTED.finditer(line):
                    word = candidate(m.group(1), tops)
                    if word is None:
                        continue
                    paths = expand_braces(word)
                    bad = [p for p in paths if not exists(p, tracked, folders, stems)]
                    if bad:
                        ignored = set(ignored_paths(root, bad))
                        bad = [p for p in bad if p not in ignored]
                    found += ["%s:%d: `%s` is not in the checkout" % (page, number, p) for p in bad]
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    found = missing_paths(root)
    for line in found:
        print(line)
    print("check_paths: %d missing path(s)" % len(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
