#!/usr/bin/env python3
"""The linear-attention variants through the lact CLI: the authors' V2 fixture rendered by `lact render`, its
checkpoint converted from a .pt with the authors' YAML key, states that record their variant, and configs the
engine does not implement refused with one line.

Usage: PYTHONPATH=tests/common:. python3 tests/cli/variants_test.py --lact build/app/lact --fixture-v2 ../shared/fixtures/lact_tiny_v2
           --fixture ../shared/fixtures/lact_tiny --tools tools
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
from cli_common import FixtureCase, use_fixture

ARGS = None
INPUTS, TARGETS = "0,1,2", "3,4"


def run(*argv):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


class VariantCliTest(FixtureCase):
    fixture_option = "fixture_v2"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        from tools.reference import safetensors_io
        cls.st = safetensors_io
        expected, _ = safetensors_io.load(os.path.join(cls.fx, "expected.safetensors"))
        cls.expected = expected["target_render_rendering"].numpy()

    def render(self, *args):
        out = tempfile.mkdtemp(dir=self.tmp)
        rc, so, se = run("render", "--targets", TARGETS, "--out", out, "--save-npy", *args)
        self.assertEqual(rc, 0, so + se)
        return np.stack([np.load(os.path.join(out, "scene", "%d.npy" % v)).transpose(2, 0, 1) for v in (3, 4)])

    def expect_one_line(self, args, names):
        rc, so, se = run(*args)
        lines = se.strip().splitlines()
        print("\n    %s" % se.strip(), end="")
        self.assertEqual(rc, 1, se)
        self.assertEqual(len(lines), 1, se)
        self.assertTrue(lines[0].startswith("lact: "), se)
        for n in names:
            self.assertIn(n, lines[0])

    def test_1_fixture_parity(self):
        got = self.render("--model", self.model, "--data", self.index, "--inputs", INPUTS)
        err = float(np.abs(got - self.expected).max())
        # The same slow weights as the baseline fixture: the variant is what changes the image.
        baseline = self.render("--model", os.path.join(os.path.abspath(ARGS.fixture), "model.safetensors"),
                               "--data", self.index, "--inputs", INPUTS)
        print("\n  V2 fixture through lact render: max abs error %.3g (baseline model on the same scene: %.3g away)"
              % (err, float(np.abs(baseline - self.expected).max())))
        self.assertLessEqual(err, 1e-4)
        self.assertGreater(float(np.abs(baseline - self.expected).max()), 1e-2)

    def test_2_converted_from_the_authors_yaml(self):
        import torch
        tensors, meta = self.st.load(self.model)
        pt = os.path.join(self.tmp, "v2.pt")
        torch.save({"model": tensors}, pt)
        config = json.loads(meta["config"])
        yaml_path = os.path.join(self.tmp, "v2.yaml")
        with open(yaml_path, "w") as f:  # the authors' YAML (JSON is YAML)
            json.dump(config, f)
        out = os.path.join(self.tmp, "converted.safetensors")
        p = subprocess.run([sys.executable, "-m", "tools.convert_checkpoint", pt, "--config", yaml_path,
                            "-o", out], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        err = float(np.abs(self.render("--model", out, "--data", self.index, "--inputs", INPUTS) - self.expected).max())
        print("\n  converted with ttt_loss_type from YAML: max abs error %.3g" % err)
        self.assertLessEqual(err, 1e-4)

    def test_3_states_record_their_variant(self):
        state = os.path.join(self.tmp, "v2_state.safetensors")
        rc, so, se = run("encode", "--model", self.model, "--data", self.index, "--inputs", INPUTS, "-o", state)
        self.assertEqual(rc, 0, so + se)
        rc, so, se = run("info", state)
        self.assertEqual(rc, 0, so + se)
        # W1 alone: 2 layers x [1, 192, 96] floats.
        self.assertIn("state: 2 tensors, 36864 floats (0.14 MiB in fp32), variant only_w1_no_wn", so)
        print("\n  " + "\n  ".join(line for line in so.splitlines() if "state" in line))
        got = self.render("--state", state)
        self.assertLessEqual(float(np.abs(got - self.expected).max()), 1e-4)
        baseline_model = os.path.join(os.path.abspath(ARGS.fixture), "model.safetensors")
        self.expect_one_line(["render", "--state", state, "--model", baseline_model, "--targets", TARGETS,
                              "--out", os.path.join(self.tmp, "never")],
                             [os.path.basename(state), "only_w1_no_wn", "dot_product"])

    def test_4_unimplemented_configs_are_refused(self):
        tensors, meta = self.st.load(self.model)
        config = json.loads(meta["config"])
        cases = {
            "mse": ("ttt_loss_type", "mse", ["ttt_loss_type 'mse'", "not implemented"]),
            "unknown_key": ("ttt_loss_type", "only_w2", ["only_w2", "not a variant"]),
            "no_query": ("no_query", True, ["no_query"]),
            "grad": ("grad_calc_method", "unroll2", ["grad_calc_method"]),
            "extra_param": ("momentum", 0.9, ["momentum", "not implemented"]),
            "straight_needs_inter1": ("ttt_loss_type", "only_w1_straight_qk_no_wn", ["inter_multi 1"]),
        }
        for name, (key, value, words) in cases.items():
            with self.subTest(case=name):
                bad = json.loads(json.dumps(config))
                bad["block_config"][1]["params"][key] = value
                path = os.path.join(self.tmp, "bad_%s.safetensors" % name)
                self.st.save(path, tensors, dict(meta, config=json.dumps(bad)))
                self.expect_one_line(["render", "--model", path, "--data", self.index, "--inputs", INPUTS,
                                      "--targets", TARGETS, "--out", os.path.join(self.tmp, "never")],
                                     [os.path.basename(path)] + words)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "never")))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lact", default="build/app/lact")
    parser.add_argument("--fixture-v2", default="../shared/fixtures/lact_tiny_v2")
    parser.add_argument("--fixture", default="../shared/fixtures/lact_tiny")
    parser.add_argument("--tools", default="tools")
    ARGS, rest = parser.parse_known_args()
    use_fixture(ARGS.fixture_v2, "fixture_v2")
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
