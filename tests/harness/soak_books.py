"""The soak's books closed (tests/harness/soak.py): outcomes per id, what was spoken, memory, files,
threads, and what each kill cost. Not a test module."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .soak import Soak

FINAL = ("finished", "failed", "rejected")


def close_books(soak: Soak, quiet: dict[str, float]) -> dict[str, Any]:
    b = soak.books
    outcomes: Counter[str] = Counter()
    problems: list[str] = []
    twice_finished, started_again, repeats_only = [], 0, 0
    for rid in b.sent:
        evs = b.events.get(rid, set())
        finals = {(k, ts) for k, ts, _r in evs if k in FINAL}
        if len(finals) != 1:
            problems.append(f"{rid}: {len(finals)} final outcomes {sorted(finals)}")
            continue
        outcomes[next(iter(finals))[0]] += 1
        if not any(k in FINAL and not r for k, _ts, r in evs):
            repeats_only += 1  # the original was lost with a broker; its repeat told the client
        if len({ts for k, ts, r in evs if k == "finished" and not r}) > 1:
            twice_finished.append(rid)
        started_again += len({ts for k, ts, _r in evs if k == "started"}) > 1
    log = soak.daemon.log_text()
    spoken = Counter(re.findall(r"Finished request (\S+) ", log))
    spoken_twice = sorted(rid for rid, n in spoken.items() if n > 1 and rid in b.sent)
    result = {
        "plan": {k: getattr(soak.plan, k) for k in ("count", "minutes", "broker_kills",
                                                     "daemon_kills", "retry_s", "seed")},
        "sent": len(b.sent), "by_kind": dict(Counter(s.kind for s in b.sent.values())),
        "resent": sum(s.sends - 1 for s in b.sent.values()),
        "ids_resent": sum(s.sends > 1 for s in b.sent.values()),
        "outcomes": dict(outcomes), "why_failed": dict(b.why_failed.most_common(12)),
        "problems": problems[:20], "problem_count": len(problems),
        "finished_twice": twice_finished, "spoken_twice_in_log": spoken_twice,
        "started_again_after_a_kill": started_again,
        "answered_only_by_a_repeat": repeats_only,
        "wyoming": dict(b.wyoming),
        "kills": _kills(soak),
        "memory": memory_window(soak),
        "quiet": quiet,
        "duration_s": round(max((t for t, _, _ in b.arrivals), default=0.0), 1),
    }
    result["ok"] = (not problems and not twice_finished and not spoken_twice
                    and len(b.sent) == soak.plan.count)
    return result


def _kills(soak: Soak) -> list[dict[str, Any]]:
    """Per kill: the requests queued and unfinished at that moment, how many the broker
    handed to the daemon again (a second `queued`: not a client's resend, which comes later),
    the ids the client sent again before the next kill, and when the first final event
    arrived after the kill."""
    b = soak.books
    out = []
    for i, kill in enumerate(b.kills):
        at = kill["at_s"]
        until = b.kills[i + 1]["at_s"] if i + 1 < len(b.kills) else float("inf")
        again = 0
        for rid in kill["in_flight"]:
            queued = sorted(t for t, r, k in b.arrivals if r == rid and k == "queued")
            again += any(t > at for t in queued)
        after = [t for t, _r, k in b.arrivals if t > at + kill["back_s"] and k in FINAL]
        out.append({"what": kill["what"], "at_s": at, "down_s": kill["back_s"],
                    "in_flight": len(kill["in_flight"]), "queued_again": again,
                    "resent_by_client": sum(at < t < until for t in b.resends),
                    "first_final_after_s": round(min(after) - at, 2) if after else None})
    return out


def memory_window(soak: Soak) -> dict[str, Any]:
    """RSS over the last part of the run (the last daemon process, after its first minute or
    first fifth), open files and threads: early in that part against once the load stopped."""
    samples = [s for s in soak.books.samples if s["pid"] == soak.pids[-1]]
    if len(samples) < 10:
        return {"samples": len(samples)}
    start = samples[0]["t"]
    warm = min(60.0, (samples[-1]["t"] - start) / 5)
    window = [s for s in samples if s["t"] >= start + warm]
    n = max(len(window) // 10, 3)
    first = statistics.median(s["rss_mb"] for s in window[:n])
    last = statistics.median(s["rss_mb"] for s in window[-n:])
    return {
        "window_s": round(window[-1]["t"] - window[0]["t"], 1),
        "rss_first_mb": round(first, 2), "rss_last_mb": round(last, 2),
        "rss_growth_mb": round(last - first, 2),
        "rss_max_mb": max(s["rss_mb"] for s in window),
        "fds_early_min": min(s["fds"] for s in window[:n]),
        "threads_early_min": min(s["threads"] for s in window[:n]),
        "fds_max": max(s["fds"] for s in window), "threads_max": max(s["threads"] for s in window),
    }
