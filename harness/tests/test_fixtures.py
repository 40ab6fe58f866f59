from __future__ import annotations

from itchbench.captures import fixtures
from itchbench.captures.inspect import inspect_capture, rejections

ALL_TYPES = set("SRHYLVWKJhAFECXDUPQBINO")


def test_every_fixture_regenerates_byte_identical():
    fxs = fixtures.load_manifest()
    assert {fx.name for fx in fxs} >= {"seed-workload", "nasdaq-day-sample"}
    for fx in fxs:
        verdict = fixtures.verify(fx)
        assert verdict.ok, verdict.explain()


def test_fixtures_are_small():
    total = sum(fx.path.stat().st_size for fx in fixtures.load_manifest() if fx.committed)
    assert total < 2_000_000


def test_nasdaq_day_sample_holds_every_type():
    fx = next(f for f in fixtures.load_manifest() if f.name == "nasdaq-day-sample")
    report = inspect_capture(fx.path)
    present = {t for t, n in report["decode"]["per_type"].items() if n > 0}
    assert present == ALL_TYPES
    assert not any(rejections(report).values()) and report["rejected"] == 0


def test_seed_workload_shape():
    fx = next(f for f in fixtures.load_manifest() if f.name == "seed-workload")
    report = inspect_capture(fx.path)
    assert report["messages"] == 7000
    per = report["decode"]["per_type"]
    assert per["R"] == 8
    body = per["A"] + per["U"]
    assert 0.98 < per["A"] / body < 0.995
    span_s = (report["last_timestamp_ns"] - report["first_timestamp_ns"]) / 1e9
    assert 395 < 7000 / span_s < 435


def test_verify_detects_a_changed_file(tmp_path, monkeypatch):
    fx = fixtures.load_manifest()[0]
    copy = tmp_path / fx.file
    copy.write_bytes(fx.path.read_bytes()[:-1] + b"\x00")
    monkeypatch.setattr(fixtures.paths, "fixtures_dir", lambda: tmp_path)
    verdict = fixtures.verify(fx)
    assert not verdict.ok
    assert "committed file" in verdict.explain()


def test_ensure_makes_a_missing_or_altered_fixture_and_refuses_a_recipe_that_drifted(tmp_path, monkeypatch):
    import dataclasses

    import pytest
    fx = next(f for f in fixtures.load_manifest() if not f.committed)
    monkeypatch.setattr(fixtures.paths, "fixtures_dir", lambda: tmp_path)
    assert fixtures.ensure(fx) and fixtures.sha256_of(fx.path) == fx.sha256  # missing: made
    assert not fixtures.ensure(fx)                                            # present: left as it is
    fx.path.write_bytes(b"not a capture")
    assert fixtures.ensure(fx) and fixtures.sha256_of(fx.path) == fx.sha256  # altered: made again
    drifted = dataclasses.replace(fx, sha256="0" * 64)
    fx.path.unlink()
    with pytest.raises(fixtures.FixtureError, match="its recipe"):
        fixtures.ensure(drifted)
    assert not drifted.path.exists() and not list(tmp_path.glob("*.new"))  # nothing half-made left behind
