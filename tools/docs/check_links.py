#!/usr/bin/env python3
"""Checks the relative links of the project's Markdown files: every [text](path) and ![alt](path) that is not a
URL must name an existing file or folder, and a #fragment must match a heading of the target (GitHub's anchors:
lower case, punctuation dropped, spaces to hyphens). Prints one line per broken link; exit 1 if any.

usage: python3 tools/docs/check_links.py [ROOT]     (default: the repository root)
"""
import os
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
SKIP_DIRS = {".git", "build", "build-asan", "out", "third_party", "node_modules"}
SKIP_FILES = {"NOTES.md"}  # working notes, not documentation


def anchors(path):
    """GitHub's heading anchors of a Markdown file."""
    found, in_code = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return found


def links(path):
    """(line number, target) of each link outside code blocks and code spans."""
    in_code = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if not in_code:
            for match in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                yield number, match.group(1)


def check(root):
    problems = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(f for f in files if f.endswith(".md") and f not in SKIP_FILES):
            path = os.path.join(folder, name)
            for number, target in links(path):
                if re.match(r"[a-z]+:", target):
                    continue  # a URL
                file_part, _, fragment = target.partition("#")
                dest = os.path.normpath(os.path.join(folder, file_part)) if file_part else path
                where = "%s:%d" % (os.path.relpath(path, root), number)
                if not os.path.exists(dest):
                    problems.append("%s: link to %s: no such file" % (where, target))
                elif fragment and dest.endswith(".md") and fragment not in anchors(dest):
                    problems.append("%s: link to %s: no heading with that anchor" % (where, target))
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    print("check_links: %d broken link(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
