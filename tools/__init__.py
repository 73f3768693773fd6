"""lact's Python tools as one package: run them from the repository root as modules, e.g.

  python3 -m tools.train.train --data ... --out RUN
  python3 -m tools.reference.check_fixture --fixture ../shared/fixtures/lact_tiny
  python3 -m tools.convert_checkpoint CKPT.pt --config CONFIG.yaml -o OUT.safetensors

From another folder, put the repository root on PYTHONPATH (PYTHONPATH=/path/to/lact python3 -m ...).
tools/check_style.py and tools/convert_to_colmap.py import nothing from here and also run by path.
"""
