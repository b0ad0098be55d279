"""The Charts page: line charts drawn as SVG on the server, from the manifest's history.

No JavaScript and no library: each chart is a few polylines with two labelled axes,
drawn from data the manifest already keeps. Run durations come from the retained run
history; documents per source over time are rebuilt backwards from today's count
through each run's new and deleted counts; open failures over time from each failure
record's first failure and resolution (entries dropped since are not in the ledger).
Indexing rate, pending backlog and search latency have no history in the manifest: they
come from this server's samples (``api/samples.py``), so they start when it started.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup
from sqlalchemy import desc, select

from headwater.api.admin.session import Signed, page, router
from headwater.api.deps import service_of
from headwater.api.samples import Sample
from headwater.clock import as_utc, utcnow
from headwater.manifest import schema as t
from headwater.workspace import Workspace

RUNS_CHARTED = 500
WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 12, 40
COLOURS = ("#0b3d5c", "#b3541e", "#2e7d32", "#6a1b9a", "#c62828", "#00696f")  # ≥ 4.5:1 on white

Point = tuple[float, float]  # (unix seconds, value)


@dataclass(frozen=True)
class Series:
    """One line: its name and points, oldest first."""

    name: str
    points: Sequence[Point]


def _label(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 10 or value == int(value) else f"{value:.1f}"


def _day(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M")


def line_chart(chart_id: str, title: str, unit: str, series: Sequence[Series]) -> Markup:
    """An accessible SVG line chart of ``series`` (an empty one says there is no data)."""
    points = [p for s in series for p in s.points]
    head = (
        f'<svg id="{escape(chart_id)}" class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'aria-labelledby="{escape(chart_id)}-t" xmlns="http://www.w3.org/2000/svg">'
        f'<title id="{escape(chart_id)}-t">{escape(title)}</title>'
    )
    if not points:
        body = f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">no data yet</text>'
        return Markup(head + body + "</svg>")
    x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
    y1 = max(p[1] for p in points) or 1.0  # all zero: a flat line at 0 under a top of 1
    if x1 == x0:
        x0, x1 = x0 - 60, x1 + 60
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def xy(p: Point) -> str:
        x = LEFT + (p[0] - x0) / (x1 - x0) * plot_w
        y = TOP + plot_h - p[1] / y1 * plot_h
        return f"{x:.1f},{y:.1f}"

    parts = [
        head,
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}" '
        'stroke="#1b1f24"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#1b1f24"/>',
        f'<text x="{LEFT - 4}" y="{TOP + 10}" text-anchor="end">{_label(y1)}</text>',
        f'<text x="{LEFT - 4}" y="{TOP + plot_h}" text-anchor="end">0</text>',
        f'<text x="{LEFT - 4}" y="{TOP + plot_h / 2}" text-anchor="end">{escape(unit)}</text>',
        f'<text x="{LEFT}" y="{HEIGHT - 22}">{_day(x0)}</text>',
        f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 22}" text-anchor="end">{_day(x1)}</text>',
    ]
    for i, s in enumerate(series):
        colour = COLOURS[i % len(COLOURS)]
        line = " ".join(xy(p) for p in s.points)
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{line}">'
            f"<title>{escape(s.name)}</title></polyline>"
        )
        parts += [
            f'<circle cx="{xy(p).split(",")[0]}" cy="{xy(p).split(",")[1]}" r="2.5" '
            f'fill="{colour}"/>'
            for p in s.points[-60:]
        ]
        legend_x = LEFT + i * 120
        parts.append(
            f'<rect x="{legend_x}" y="{HEIGHT - 12}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{legend_x + 14}" y="{HEIGHT - 3}">{escape(s.name[:14])}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _seconds(moment: datetime) -> float:
    return as_utc(moment).timestamp()


def run_series(ws: Workspace) -> tuple[list[Series], list[Series]]:
    """Run durations and documents over time, one series per configured source."""
    r = t.runs.c
    durations: list[Series] = []
    documents: list[Series] = []
    with ws.manifest.engine.connect() as conn:
        for section in ws.config.source:
            rows = list(
                conn.execute(
                    select(r.started_at, r.finished_at, r.duration_s, r.new, r.deleted)
                    .where(r.source_id == section.id, r.finished_at.is_not(None))
                    .order_by(desc(r.started_at))
                    .limit(RUNS_CHARTED)
                )
            )
            rows.reverse()
            durations.append(
                Series(section.id, [(_seconds(x.started_at), float(x.duration_s)) for x in rows])
            )
            count = ws.manifest.count_documents(section.id)
            back: list[Point] = [(utcnow().timestamp(), float(count))]
            for x in reversed(rows):  # newest first: undo each run to get the count before
                back.append((_seconds(x.finished_at), float(count)))
                count = max(0, count - x.new + x.deleted)
            documents.append(Series(section.id, list(reversed(back))))
    return durations, documents


def failure_series(ws: Workspace) -> list[Series]:
    """Open failure records over time: +1 at the first failure, -1 at the resolution."""
    f = t.failures.c
    events: list[Point] = []
    with ws.manifest.engine.connect() as conn:
        for first, resolved in conn.execute(select(f.first_failed_at, f.resolved_at)):
            events.append((_seconds(first), 1.0))
            if resolved is not None:
                events.append((_seconds(resolved), -1.0))
    events.sort()
    depth, points = 0.0, []
    for moment, change in events:
        depth += change
        points.append((moment, depth))
    if points:
        points.append((utcnow().timestamp(), depth))
    return [Series("open failures", points)]


def sampled_series(samples: Sequence[Sample]) -> tuple[list[Series], list[Series], list[Series]]:
    """From the server's samples: chunks indexed per minute and pending documents, one
    series per index; search latency, one series for the median and one for p95."""
    names = sorted({name for s in samples for name in s.pending})
    rate = [Series(n, [(s.at, s.chunks_per_minute.get(n, 0.0)) for s in samples]) for n in names]
    backlog = [Series(n, [(s.at, float(s.pending.get(n, 0))) for s in samples]) for n in names]
    p50 = [(s.at, s.search_p50_ms) for s in samples if s.search_p50_ms is not None]
    p95 = [(s.at, s.search_p95_ms) for s in samples if s.search_p95_ms is not None]
    latency = [Series("median", p50), Series("p95", p95)] if p50 else []
    return rate, backlog, latency


def charts_context(ws: Workspace, samples: Sequence[Sample]) -> dict[str, Markup]:
    durations, documents = run_series(ws)
    rate, backlog, latency = sampled_series(samples)
    return {
        "rate": line_chart("chart-rate", "Chunks indexed per minute by index", "/min", rate),
        "backlog": line_chart(
            "chart-backlog", "Documents pending indexing by index", "docs", backlog
        ),
        "latency": line_chart("chart-latency", "Search latency (API)", "ms", latency),
        "sample_every": Markup.escape(ws.config.api.chart_sample_every),
        "durations": line_chart("chart-durations", "Run durations by source", "s", durations),
        "documents": line_chart(
            "chart-documents", "Active documents per source over time", "docs", documents
        ),
        "failures": line_chart(
            "chart-failures", "Open failure records over time", "open", failure_series(ws)
        ),
    }


@router.get("/admin/charts", response_class=HTMLResponse)
async def charts(request: Request, sess: Signed) -> Response:
    samples = request.app.state.sampler.samples()
    context = await run_in_threadpool(charts_context, service_of(request).ws, samples)
    return page(request, "charts.html", sess, **context)
