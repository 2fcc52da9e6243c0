"""Hypothesis profiles, and each test's background compiles finished with it (`_optimised_tiers_done`).

* ``ci``: derandomized (examples drawn from a hash of each test, so every run of the suite tests the
  same examples; derandomize implies no example database) — chosen when the environment variable
  ``CI`` is set to anything but ``""``, ``0`` or ``false`` (``.ci/run`` sets it).
* ``dev``: the default elsewhere; fresh examples each run, failures replayed from ``.hypothesis``.
* ``fuzz`` (alias ``soak``): many more examples for long local bug hunts
  (``HYPOTHESIS_PROFILE=fuzz python -m pytest tests/test_fuzz_affine.py``).  A failing example it
  finds becomes an explicit ``@example`` or a regression test, so CI keeps it.
``HYPOTHESIS_PROFILE`` overrides the choice."""
import os
import sys

import pytest
from hypothesis import HealthCheck, settings

# every profile derives from hypothesis' own "default" one: hypothesis loads its built-in "ci"
# profile (derandomized) whenever the variable CI exists, even CI=false, and a profile registered
# without a parent would inherit that
_QUIET = dict(parent=settings.get_profile("default"), deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", derandomize=True, database=None, max_examples=80, print_blob=True, **_QUIET)
settings.register_profile("dev", derandomize=False, max_examples=60, **_QUIET)
settings.register_profile("fuzz", derandomize=False, max_examples=1500, **_QUIET)
settings.register_profile("soak", derandomize=False, max_examples=1500, **_QUIET)


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if _in_ci() else "dev"))


@pytest.fixture(autouse=True)
def _optimised_tiers_done():
    """Each test's background compiles (`ctensor.driver.tiering`) end with the test: no test runs
    beside another's O3 compile, and none finds the recursion limit raised by one (`runtime.recursion`)."""
    yield
    tiering = sys.modules.get("ctensor.driver.tiering")
    if tiering is not None:
        tiering.wait()


@pytest.fixture(params=["numpy", "polars"])
def sorter(request, monkeypatch):
    """The index builds' sorts (`radix_order`, `formats.key_sort`) at every size: numpy's, or
    polars' sort (used from `LIBRARY_SORT_AT` values on when installed), so both are checked on
    small data."""
    from ctensor.formats import key_sort
    if request.param == "polars":
        pytest.importorskip("polars")
    monkeypatch.setattr(key_sort, "LIBRARY_SORT_AT", 0 if request.param == "polars" else 1 << 62)
    return request.param
