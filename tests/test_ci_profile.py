"""CI runs the same hypothesis examples every run (issue 31, determinism): under ``CI=true`` the
`conftest` profile is derandomized, so two pytest runs of a property test draw identical examples;
with the CI variable unset or false the ``dev`` profile draws fresh ones.  Checked in fresh pytest
processes that load this directory's conftest and write every drawn example to a file."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = '''
import os
from hypothesis import given, settings, strategies as st

@settings(max_examples=25)
@given(st.lists(st.floats(allow_nan=False), max_size=5), st.integers())
def test_draw(xs, n):
    with open(os.environ["DRAWN"], "a") as f:
        f.write(repr((xs, n)) + "\\n")
'''


def _draws(tmp_path: Path, run: int, ci: str | None) -> str:
    work = tmp_path / f"run{run}"
    work.mkdir()
    conftest = Path(__file__).with_name("conftest.py").read_text()
    (work / "conftest.py").write_text(conftest)
    (work / "test_probe.py").write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    if ci is not None:
        env["CI"] = ci
    env["DRAWN"] = str(work / "drawn.txt")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(work)],
                         cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return (work / "drawn.txt").read_text()


@pytest.mark.parametrize("ci", ["true", "1"])
def test_ci_profile_draws_the_same_examples_every_run(tmp_path, ci):
    first, second = _draws(tmp_path, 1, ci), _draws(tmp_path, 2, ci)
    assert first.count("\n") >= 10 and first == second


@pytest.mark.parametrize("ci", [None, "false"])
def test_dev_profile_draws_fresh_examples(tmp_path, ci):
    assert _draws(tmp_path, 1, ci) != _draws(tmp_path, 2, ci)
