from __future__ import annotations

import struct

from itchbench.captures import fixtures
from itchbench.captures.inspect import inspect_capture, rejections

from independent_bbo import bbo_events, mold_messages, udp_payloads

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


def test_wide_fields_sample_spans_the_widths_the_spec_gives(tmp_path):
    """Read with struct from the ITCH 5.0 spec's layouts, not by itchbench: each width a narrow gateway gets wrong
    is there (docs/book-and-bbo.md, "Field widths"), and no value leaves the spec's range."""
    fx = next(f for f in fixtures.load_manifest() if f.name == "wide-fields-sample")
    locates, refs, prices, shares, kinds, seqs, symbols = set(), [], [], [], set(), [], set()
    for seq, m in mold_messages(fx.path):
        seqs.append(seq)
        if m[:1] == b"R":
            symbols.add(m[11:19])
        kinds.add(chr(m[0]))
        locates.add(struct.unpack_from(">H", m, 1)[0])
        if m[:1] in (b"A", b"F"):
            ref, _, n, price = struct.unpack_from(">QcI8xI", m, 11)
            refs.append(ref)
            shares.append(n)
            prices.append(price)
        elif m[:1] == b"U":
            old, new, n, price = struct.unpack_from(">QQII", m, 11)
            refs += [old, new]
            shares.append(n)
            prices.append(price)
    assert kinds == ALL_TYPES
    assert seqs[0] < 1 << 32 < seqs[-1] and seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # across 2^32, no gap
    datagrams = [len(p) for p in udp_payloads(fx.path)]
    assert max(datagrams) <= 1400 and len([n for n in datagrams if n > 1024]) > 50  # full packets, under the MTU
    assert min(refs) >= 1 << 63  # above 2^53: a double's neighbouring integers are one
    assert len([s for s in symbols if b" " not in s]) >= 40  # Alpha(8) filled: no space after the symbol
    assert max(locates) == 65535 and len([x for x in locates if x > 32767]) >= 50  # a signed 16 bits' negatives
    assert 0 < min(prices) and max(prices) <= 1_999_999_999  # Price(4): at most 199,999.9999
    below_a_dollar = [p for p in prices if p < 10_000]
    assert len([p for p in below_a_dollar if p % 100]) > 100  # sub-penny prices
    assert len([p for p in prices if int(struct.unpack("f", struct.pack("f", p))[0]) != p]) > 100  # no float holds
    assert len([n for n in shares if n >= 1 << 16]) > 50
    assert any(bid_qty > 1 << 32 for *_, bid_qty, _, _ in bbo_events(fx.path))  # a best bid of more than 2^32


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
