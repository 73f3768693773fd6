#!/usr/bin/env python3
"""Every Python tool with command-line options (tools/, tools/*/) starts: `--help` prints its usage and exits 0.
A tool whose imports broke (a helper module moved, as tests/common did once under tools/serve_bench.py) fails
here rather than when someone needs it. Run from the repository root with it on PYTHONPATH, as the tools' own
docs say (`python3 -m tools.train.train`, or PYTHONPATH=.).

  PYTHONPATH=tests/common:. python3 tests/tools/tools_start_test.py
"""
import glob
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tools_with_options():
    found = []
    pattern = [os.path.join(ROOT, "tools", "*.py"), os.path.join(ROOT, "tools", "*", "*.py")]
    for path in sorted(glob.glob(pattern[0]) + glob.glob(pattern[1])):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if "ArgumentParser(" in text and "__main__" in text:
            found.append(path)
    return found


class ToolsStart(unittest.TestCase):
    def test_every_tool_prints_its_usage(self):
        tools = tools_with_options()
        self.assertGreater(len(tools), 10)  # the search found the tools
        env = dict(os.environ, PYTHONPATH=ROOT)  # not the tests' own helpers: a tool finds its modules itself
        for path in tools:
            name = os.path.relpath(path, ROOT)
            with self.subTest(tool=name):
                p = subprocess.run([sys.executable, path, "--help"], capture_output=True, text=True, timeout=120,
                                   cwd=ROOT, env=env)
                self.assertEqual(p.returncode, 0, "%s --help: %s" % (name, p.stderr[-1500:]))
                self.assertIn("usage:", p.stdout, name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
