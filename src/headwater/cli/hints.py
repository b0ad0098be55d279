"""``headwater hints``: the hint queue (change notifications waiting for a targeted read)."""

from __future__ import annotations

import typer

from headwater.cli.common import app, open_workspace, out, print_json, run_command, safe


@app.command("hints")
def hints(
    source: str = typer.Argument(None, help="Only this source."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Queued hints (oldest first) and, per source, the last hint and the last read's lag."""

    def body() -> None:
        with open_workspace() as ws:
            if source is not None:
                ws.require_known_source(source)
            queued = [h.as_dict() for h in ws.manifest.hints.queued(source)]
            states = ws.manifest.hints.states()
        sources = [s.as_dict() for k, s in sorted(states.items()) if source in (None, k)]
        if as_json:
            print_json({"hints": queued, "sources": sources})
            return
        if not queued:
            out.print("no hints queued")
        for h in queued:
            what = h["object_id"] or "(the whole source: a scan)"
            line = f"{h['source']} {h['kind']} {what} x{h['count']} from {h['origin']}, due {h['due_at']}"
            out.print(safe(line, markup=False), markup=False)
        for s in sources:
            lag = f"{s['last_lag_s']:.1f}s" if s["last_lag_s"] is not None else "-"
            out.print(
                safe(
                    f"{s['source']}: last hint {s['last_hint_at'] or 'never'} "
                    f"({s['last_origin'] or '-'}), last read {s['last_read_at'] or 'never'}, "
                    f"lag {lag}; {s['received']} received, {s['read']} read, "
                    f"{s['dropped']} dropped (out of scope)",
                    markup=False,
                ),
                markup=False,
            )

    run_command(body)
