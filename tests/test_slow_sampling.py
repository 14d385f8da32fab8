"""The slow suite's seeded sample (tests/conftest.py): one seed for every process of a run."""

from __future__ import annotations

import os

from conftest import SAMPLE_ENV, SEED_ENV, _slow_sample


def test_a_drawn_seed_is_handed_to_the_workers_through_the_environment(monkeypatch):
    """pytest-xdist's workers start with the controller's environment: the seed the controller
    draws must be in it, or each worker draws its own and they collect different tests (CI's
    slow phase failed so: "Different tests were collected between gw0 and gw1")."""
    monkeypatch.setenv(SAMPLE_ENV, "0.4")
    monkeypatch.setenv(SEED_ENV, "0")  # so that the seed drawn below is removed after the test
    monkeypatch.delenv(SEED_ENV)
    fraction, seed = _slow_sample()
    assert fraction == 0.4
    assert os.environ[SEED_ENV] == str(seed)
    assert _slow_sample() == (0.4, seed)  # a worker reading the environment gets the same sample


def test_a_given_seed_is_kept(monkeypatch):
    monkeypatch.setenv(SAMPLE_ENV, "0.25")
    monkeypatch.setenv(SEED_ENV, "1234")
    assert _slow_sample() == (0.25, 1234)
