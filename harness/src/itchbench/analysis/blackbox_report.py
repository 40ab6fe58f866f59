"""report.md of a run of a gateway brought through its contract: what
itchbench saw from outside (the path to it, its BBO stream against the
simulation's, wire-to-wire latency), and what it could not see, said."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import rundir
from ..gateways import collector
from . import latency_pass, stats


def _us(ns: float) -> str:
    return f"{ns / 1000:,.1f}"


def gateway_rows(under: dict[str, Any]) -> list[str]:
    """The gateway under test as Markdown table rows: the build measured, its contract, how it was built."""
    if not under:
        return ["| gateway under test | not recorded |"]
    where = f" in `{under['repository']}`" if under.get("repository") else ""
    dirty = (f" — **dirty working tree**, diff sha256 `{under['diff_sha256'][:16]}…`" if under.get("dirty") else "")
    rows = [f"| gateway under test | {under.get('name', '?')}, commit `{under.get('commit') or 'not in git'}`{where}"
            f"{dirty} |"]
    if under.get("contract"):
        rows.append(f"| its contract | `{under['contract']}`, sha256 `{str(under.get('contract_sha256'))[:16]}…` |")
    if under.get("build"):
        log = under.get("build_log_sha256")
        rows.append(f"| its build | {'; '.join(f'`{c}`' for c in under['build'])}"
                    f"{f', output sha256 `{log[:16]}…`' if log else ''}{' (built before the run)' if under.get('prebuilt') else ''} |")
    return rows


def recovery_section(r: dict[str, Any] | None) -> list[str]:
    """What the wire lost and what the exchange's re-request server gave back (runs/recovery.py)."""
    if not r:
        return []
    g = r.get("gateway")  # the built-in gateway's own counts, white box
    refused = ", ".join(f"{n:,} {k.replace('_', ' ')}" for k, n in r["requests_by_outcome"].items()
                        if k != "served" and n) or "none"
    ways = (["a B line sending the session again"] if r["lines"] > 1 else []) + \
           (["the run's re-request server holding the whole session"] if r["server"] else [])
    return ["## Recovery", "",
            "The feed lost packets on the wire (the capture's faults, and each line's at send time); the way back: "
            f"{' and '.join(ways) or 'none'} (docs/exchange.md). The BBO above is checked against the simulation of "
            "the whole session.", "",
            "| | |", "|---|---|",
            f"| messages lost on the wire | {r['lost_on_wire']:,} |",
            *([f"| lost on line A only / B only: the other line carried them | {r['lost_on_a_only']:,} / "
               f"{r['lost_on_b_only']:,} |"] if r["lines"] > 1 else []),
            f"| lost on every line | {r['lost_on_every_line']:,} |",
            f"| of which answered by the server | {r['answered_by_server']:,} |",
            f"| never answered | {r['never_answered']:,}"
            + (f" (first: seq {r['first_never_answered']:,})" if r["first_never_answered"] is not None else "") + " |",
            f"| requests the gateway sent | {r['requests']:,} (refused: {refused}) |",
            f"| answer packets sent / dropped by the server | {r['answer_packets']:,} / {r['answers_dropped']:,} |",
            f"| messages answered | {r['messages_answered']:,} |",
            f"| gaps (runs of lost messages) | {r.get('gaps', 0):,} |",
            *([f"| the first BBO event after each gap, send → {'published' if g else 'received'}: p50 / p99 / max "
               f"µs | {h['p50'] / 1000:,.1f} / {h['p99'] / 1000:,.1f} / {h['max'] / 1000:,.1f} ({h['measured']:,} "
               "gaps) |"] if (h := r.get("held_after_gaps_ns")) else []),
            *([f"| each gap filled, from the packet that showed it to its last message in the book: p50 / p99 / max "
               f"µs | {t['p50'] / 1000:,.1f} / {t['p99'] / 1000:,.1f} / {t['max'] / 1000:,.1f} ({t['measured']:,} "
               "gaps) |"] if (t := r.get("time_to_recover_ns")) else []),
            *_gateway_recovery_rows(g), "",
            "The first BBO event after a gap shows how long the gap held the stream back: a gateway that waits for "
            "the gap to be filled shows the wait there, one that skips ahead its usual latency.", ""]


def join_section(j: dict[str, Any] | None) -> list[str]:
    """A late join (docs/snapshot.md): the snapshot, what the feed brought meanwhile, the BBO from the join on."""
    if not j:
        return []
    snap, check = j.get("snapshot") or {}, j["bbo_check"]
    after = check["after_join"]
    ms = lambda v: f"{v:,.1f} ms" if v is not None and v >= 0 else "—"  # noqa: E731
    rows = [f"| the snapshot: its last message (N) / End of Snapshot's number | {j['through']:,} / {j['next']:,} |",
            f"| the snapshot: messages, live orders, stocks in its directory, bytes | {snap.get('messages', 0):,}, "
            f"{snap.get('orders', 0):,}, {snap.get('directory', 0):,}, {snap.get('bytes', 0):,} |",
            f"| connections to the snapshot service (cut by the server) | {j.get('connections') or 0} "
            f"({j.get('server_cut', 0)}) |",
            f"| transfer time | {ms(j.get('transfer_ms'))} |",
            f"| the live feed began at seq | {j['from_seq']:,} |",
            f"| messages between the snapshot and the feed, re-requested | {j['re_requested_between']:,} |"]
    if not j.get("black_box"):
        rows += [f"| the gateway: packets held while it joined (most at once), messages of them the snapshot "
                 f"covered, dropped for room | {j['held']:,} ({j.get('held_most', 0):,}), {j['covered_messages']:,}, "
                 f"{j['dropped_while_joining']:,} |",
                 f"| the gateway: from its first connect to the feed applied from N + 1 | "
                 f"{ms(j.get('joined_after_ms'))} |"]
    rows += [f"| BBO events after the join = the simulation's (exact) | {after['events']:,} of "
             f"{after['reference_events']:,}: {'equal' if after['equal'] else 'DIFFER'} |",
             f"| each stock's book at the join = the simulation's | {check['stocks_at_join']:,} stocks, "
             f"{check['stocks_differing_at_join']:,} differing |",
             f"| events for messages the snapshot covered | {check['events_before_join']:,} |"]
    return ["## Late join", "",
            "The gateway joined the running feed (docs/snapshot.md): the book from the snapshot service, the feed "
            "from the number its End of Snapshot carried. Judged against the simulation of the whole session from "
            "the join point on.", "", "| | |", "|---|---|", *rows, ""]


def _gateway_recovery_rows(g: dict[str, Any] | None) -> list[str]:
    """The built-in gateway's own account of its recovery stage (gateway.json "recovery")."""
    if not g:
        return []
    first = g["messages_first"]
    return [f"| the gateway: messages first by line A / B / answers | {first['a']:,} / {first['b']:,} / "
            f"{first['answers']:,} |",
            f"| the gateway: duplicate packets dropped (messages) | {g['duplicate_packets']:,} "
            f"({g['duplicate_messages']:,}) |",
            f"| the gateway: packets held past a gap (most at once) | {g['held_packets']:,} ({g['held_most']:,}) |",
            f"| the gateway: gaps filled / given up; messages given up | {g['gaps_filled']:,} / {g['gaps_given_up']:,};"
            f" {g['messages_given_up']:,} |",
            f"| the gateway: requests (retries), messages asked for | {g['requests']:,} ({g['request_retries']:,}), "
            f"{g['messages_requested']:,} |"]


def speed_section(summary: dict[str, Any]) -> list[str]:
    """What its process used (process-meter): wall, CPU a message, peak RSS; messages a second when it read the
    capture itself."""
    res, perf = summary.get("resources") or {}, summary.get("performance") or {}
    if not res:
        return []
    md = ["## Speed of its process", "", "| | |", "|---|---|"]
    if perf.get("messages_per_s"):
        md.append(f"| messages a second, start to exit | {perf['messages_per_s']:,.0f} |")
    md += [f"| wall time, start to exit | {res['wall_s']:,.3f} s |",
           f"| CPU time (user + system) | {res['cpu_s']:,.3f} s ({res['cpu_user_s']:,.3f} + {res['cpu_system_s']:,.3f}) |",
           f"| CPU time a message | {res.get('cpu_ns_per_message', 0):,.0f} ns ({res['messages']:,} messages) |",
           f"| peak RSS | {res['max_rss_kib'] / 1024:,.1f} MiB |", "",
           "Measured by process-meter from a parent of its own (wait4): its threads and every process it started "
           "are included; start-up is part of the wall time.", ""]
    return md


def path_section(rec: dict[str, Any]) -> list[str]:
    """The feed's way to the gateway, counted (UDP: what the sender sent and what became of it in the kernel), and
    the accounting's checks, each held or failed: what the verdict's LOST or NOT BALANCED was judged from."""
    md = []
    udp = rec.get("udp")
    if udp:
        no_socket = udp.get("kernel_no_socket", 0)
        md += ["## The feed's way to the gateway", "", "| datagrams | |", "|---|---:|",
               f"| sent by {udp['sender']} | {udp['sender_sent']:,} |",
               f"| delivered to a socket | {udp['kernel_delivered']:,} |",
               f"| dropped by the kernel (a socket's buffer full) | {udp['kernel_dropped']:,} |",
               f"| with no socket to take them (no port bound, no member of the group) | {no_socket:,} |", ""]
        lost = (rec.get("loss") or {}).get("kernel_no_socket_datagrams", 0)
        if lost:
            md += [f"Of those with no socket, at least {lost:,} were sent up to the session's last message: lost, "
                   "never received (docs/gateway-contract.md, \"What a run says\").", ""]
        elif no_socket:
            md += ["Those with no socket may all have been sent after the session's last message (ends of session "
                   "a gateway that ended at the first leaves to no socket): none is counted lost.", ""]
    if rec.get("checks"):
        md += ["Accounting checks:", "", *(f"- {'held' if ok else '**failed**'}: {name}"
                                          for name, ok in rec["checks"].items()), ""]
    return md


def build(run_dir: Path, manifest: dict[str, Any], summary: dict[str, Any], noise_lines: list[str],
          closing: list[str]) -> Path:
    scen = manifest["scenario"]
    contract = (summary.get("gateway") or {}).get("contract") or {}
    md = [f"# itchbench run: {manifest.get('label', manifest['run_id'])}", "",
          f"**{summary['verdict']['headline']}**", "",
          f"Run `{manifest['run_id']}`, {scen['transport']} transport, created {manifest['created_utc']}; "
          f"gateway `{contract.get('name', '?')}` from `{scen['gateway_file']}` (black box: docs/gateway-contract.md).",
          ""]
    if summary.get("error"):
        md += [f"> Error: {summary['error']}", ""]
    env = manifest["environment"]
    md += ["## Environment", "", "| | |", "|---|---|", *gateway_rows(manifest.get("gateway_under_test") or {}),
           f"| itchbench (the harness, not measured) | `{env['git']['commit']}`"
           f"{' (dirty)' if env['git'].get('dirty') else ''} |",
           f"| kernel | {env['kernel']} |", f"| CPU | {env['cpu_model']} × {env['cpu_count']} |", ""]
    md += noise_lines
    rec = summary.get("reconciliation") or {}
    check = rec.get("bbo_check")
    md += ["## Workload", "", f"Capture `{scen['capture']}` (sha256 `{manifest['capture_sha256'][:16]}…`).", ""]
    md += path_section(rec)
    if check:
        md += ["## BBO against the simulation", "",
               f"Mode `{check['mode']}`: {check['events']:,} events received, {check['reference_events']:,} in the "
               f"reference; missing {check['missing']:,}, extra {check['extra']:,}, wrong {check['wrong']:,}, "
               f"out of order {check.get('out_of_order', 0):,}, "
               f"malformed lines {check['malformed_lines']:,}.", ""]
        if check.get("first_difference"):
            f = check["first_difference"]
            md += [f"First difference, by seq: seq {f['seq']:,} (message {f['message']}), stock {f['stock']}, "
                   f"{f['stream']} event #{f['event']:,} ({f['kind']}):", "", f"- expected: {f['expected']}",
                   f"- got: {f['got']}", ""]
        if check.get("malformed_examples"):
            why = f" (the first: {check['malformed_why']})" if check.get("malformed_why") else ""
            md += ["Malformed lines, first ones: " + ", ".join(f"`{x[:80]}`" for x in check["malformed_examples"])
                   + why, ""]
    md += recovery_section(rec.get("recovery"))
    md += join_section(rec.get("join"))
    not_served = (summary.get("transport_details") or {}).get("subscribers_not_served")
    if not_served:  # the scenario's subscribers: none to measure, said rather than left out in silence
        md += ["## Subscribers", "", f"None served: {not_served}; no hop to a subscriber is measured.", ""]
    md += speed_section(summary)
    w2w = summary.get("wire_to_wire")
    md += ["## Latency, wire to wire", ""]
    if w2w:
        md += [f"Per BBO event: the collector's receive time minus the send of the packet (or line) that carried "
               f"its message, {w2w['events']:,} events ({w2w['not_matched']:,} without a send stamp). µs:", "",
               "| from | p50 | p90 | p99 | p99.9 | max | mean |", "|---|---|---|---|---|---|---|"]
        for name, words in (("from_intended", "intended send (coordinated-omission free)"),
                            ("from_sent", "actual send")):
            v = w2w[name]
            if v:
                md.append(f"| {words} | {_us(v['p50'])} | {_us(v['p90'])} | {_us(v['p99'])} | {_us(v['p999'])} | "
                          f"{_us(v['max'])} | {_us(v['mean'])} |")
        md.append("")
        late = collector.stamp_words(w2w)
        if late:
            unknown = collector.stamp_counts(w2w)[0]
            md += [f"**How exact the receive stamps are:** {late}."
                   + (" `itchbench compare` shows these figures and does not judge them; the results store leaves "
                      "them out." if unknown else ""), ""]
        if w2w.get("hops"):
            md += ["### Hop by hop", "",
                   "Each event's latency from the intended send, split at the actual send; the means add up to "
                   "the mean above (percentiles do not add). µs:", "",
                   "| hop | mean | p50 | p99 | p99.9 | max |", "|---|---|---|---|---|---|"]
            for v in w2w["hops"]:
                if "mean" in v:
                    md.append(f"| {v['words']} | {_us(v['mean'])} | {_us(v['p50'])} | {_us(v['p99'])} | "
                              f"{_us(v['p999'])} | {_us(v['max'])} |")
            md.append("")
    elif scen["transport"] == "sim":
        md += ["Not applicable: the gateway read the capture itself, so nothing was sent to it; it is timed by its "
               "process (above).", ""]
    else:
        md += ["Not measured: the sender left no send stamps (tcpreplay stamps nothing: use "
               "`replay.sender = \"udp-replay\"`, or the serial transport), or no event was received.", ""]
    white = run_dir / rundir.GATEWAY_OUT
    # Its stages are figures only from a log that holds together (gateways/white_box.py); else the check that failed.
    refused = rec.get("white_box_log", {}).get("failed")
    if refused:
        md += ["## Inside the gateway (white box)", "",
               "Not reported: the gateway's own latency log (`gateway-out/latency.lat`) does not hold together: "
               + "; ".join(refused) + ".", ""]
    elif contract.get("white_box") and (white / "latency.lat").is_file():
        lat = latency_pass.stages_of(white, int(scen.get("warmup_messages", 0)))
        md += ["## Inside the gateway (white box)", "",
               "The gateway wrote itchbench's latency log (gateway/log/FORMAT.md) in `gateway-out/`: its own "
               f"stages, ns, {lat.messages:,} messages:", "",
               "| stage | p50 | p90 | p99 | p99.9 | max |", "|---|---|---|---|---|---|"]
        for name, words in lat.stages:
            st = lat.stage[name].stats(stats.DEFAULT_METHOD).iloc[0]
            md.append(f"| {words} | {st['p50']:,.0f} | {st['p90']:,.0f} | {st['p99']:,.0f} | {st['p999']:,.0f} | "
                      f"{st['max']:,.0f} |")
        md.append("")
    if summary.get("not_seen"):
        md += [f"Not seen by itchbench: {summary['not_seen']}; the hops inside it are shown as one.", ""]
    if summary.get("not_seen_tail"):
        md += [f"Not seen by itchbench: {summary['not_seen_tail']}.", ""]
    md += closing
    out = run_dir / "report.md"
    out.write_text("\n".join(md).rstrip() + "\n")
    rundir.write_json(run_dir / "report.json", {"wire_to_wire": w2w, "bbo_check": check})
    return out
