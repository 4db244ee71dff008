"""The day the suite runs on. The program checks the cluster's Kubernetes version against Scaleway's withdrawal
dates on the day it runs (`$GPU_CI_TODAY`, else the calendar's): every run of it under test, in-process or in a
subprocess, runs on this day, so no test's verdict moves when a version's date passes.

tests/conftest.py puts it in the suite's own environment; an environment a test builds from scratch (one that
sets `PATH`) spreads `SUITE_DAY_ENV` into it (tests/repo/test_suite_day.py holds that).
"""

from __future__ import annotations

TODAY_VARIABLE = "GPU_CI_TODAY"
"""infra.config.checks.versions.TODAY_VARIABLE (a test holds the two equal; this module imports no infra)."""
SUITE_DAY = "2026-12-01"
SUITE_DAY_ENV = {TODAY_VARIABLE: SUITE_DAY}
"""What an environment built from scratch carries: `{"PATH": ..., **SUITE_DAY_ENV}`."""
