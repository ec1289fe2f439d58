"""Example counts of the costliest property tests: a quarter in the default run, all in the soak run."""
from __future__ import annotations

import pytest


def examples(full: int):
    """Run a property test twice over: with a quarter of FULL examples (at least 100) in the default
    run, and with FULL in the soak run (`-m slow`, which CI runs too). The test takes `examples`."""
    quick = max(100, full // 4)
    return pytest.mark.parametrize("examples", [pytest.param(quick, id=f"{quick}-examples"),
                                                pytest.param(full, id=f"{full}-examples", marks=pytest.mark.slow)])
