"""Generate, and then mutate, a synthetic benchmark corpus, deterministically by seed.

The idea: every benchmark (Headwater and its peers) must run on the same bytes, and the
"after a change" phase must know exactly what changed. So document ``i`` of a corpus is a
pure function of ``(seed, i)`` (its own ``random.Random``), and ``mutate`` edits exactly
one paragraph in 1% of the Markdown documents, deletes 1% of the documents and adds 1% new
ones, and writes a JSON record of what it did, including each edited paragraph's old and
new text, so a runner can rebuild the previous version of an edited file and count the
chunks whose text changed.

Layout of a corpus directory::

    DIR/corpus.json              seed, document count, next index, counts by format
    DIR/docs/sNNN/doc-NNNNNN.md  the documents (about 2% .html and 0.5% .pdf)
    DIR/mutations/NNN.json       one record per mutate run (also DIR/last-mutation.json)

Prose is drawn from a fixed vocabulary (common English words with a Zipf-like weighting,
plus per-topic invented terms so keyword search has something selective to find), in
sentences, paragraphs and ``##`` sections. 20,000 documents take well under a minute.

    python bench/corpus.py generate --out DIR --docs 20000 --seed 1
    python bench/corpus.py mutate --dir DIR --seed 1
"""

from __future__ import annotations

import argparse
import hashlib
import html
import io
import itertools
import json
import random
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HTML_SHARE = 0.02
PDF_SHARE = 0.005
MIN_WORDS, MAX_WORDS = 300, 3000
DOCS_PER_DIR = 1000
TOPICS = 64

_COMMON = """
the of and to in a is that for it as was with be by on not he this are or his from at which
but have an they you were her she there been one all we their has would when if so no will
more other its time into only some could new them these two may first then do any like my
now over such our man me even most made after also did many before must through back years
where much your way well down should because each just those people how too little state
good very make world still own see men work long get here between both life being under
never day same another know while last might us great old year off come since against go
came right used take three system water report result process team plan market service
group number part place case point company problem question program government week area
fact hand order level member study table data value policy power change model light board
design cost energy field method network project record review risk sample signal source
space stage standard structure support test theory trade training unit user version view
analysis budget capacity client contract control customer device engine factor feature
figure format function growth history income industry input issue knowledge language
limit machine material measure memory message metric node output period pressure price
product quality range rate region release resource response route rule schedule scope
section security sensor server session share shift site size skill software speed storage
strategy stream survey target task technique term threshold tool track traffic transfer
update value vendor volume window worker account action activity address agent agreement
approach article aspect attempt audience author balance basis benefit block branch
building camera category channel chapter charge check choice circle claim class climate
code column comment committee community comparison component concept condition conference
connection context contrast copy county course credit culture current cycle damage debate
decision default degree delivery demand department deposit detail difference direction
display distance district document domain draft driver effect effort element emphasis
employee entry environment equipment error estimate event evidence example exchange
expense experience expert export extent failure feedback file filter finance focus force
forecast frame framework fund gap gate goal guide habit handle harbor heart height image
impact index instance instrument interest interval inventory investment item journal judge
key label layer lead league lesson letter library license line link list load loan
location logic loss manager margin match meaning meeting mention minute mission mode
moment motion movement museum name narrative nation native notice object offer office
operation opinion option origin owner package page panel paper parent partner pattern
payment percent permit phase phrase picture piece pilot pipeline platform player pocket
portion position post potential practice preference premium presence principle priority
profile progress property proposal protocol provider purpose quarter query radio reason
receipt recipe reference region relation remote repair request research reserve resolve
retail revenue river role sale scale scene school screen season sector segment sequence
series setting shape signal silver single slope solution sound speech spirit spring square
staff start status step stock story street strength student style subject success summer
surface symbol talent tank teacher temperature tension territory text thought ticket title
topic total tower transport trend trial truck trust turn type variety vehicle venture
village vision voice wave weather weight wheel winter wire yard zone accurate active actual
additional annual available basic careful central certain clear common complete complex
critical current direct early easy effective entire equal essential external final fixed
formal free general global heavy high huge important independent initial internal large
late legal likely local low main major manual maximum minimum mobile modern narrow natural
necessary normal obvious official open optional original particular physical popular
positive possible practical previous primary private proper public quick random rapid rare
ready real recent regular relevant remote responsible rough safe secure separate serious
short significant similar simple slow small smooth social special specific stable standard
steady strict strong sudden suitable technical thin total typical unique unusual useful
usual valid various visible vital wide accept achieve adjust allow apply approve arrange
assess assign assume attach avoid build calculate capture carry cause collect combine
compare compile confirm connect consider contain continue convert create deliver depend
deploy describe detect determine develop divide enable ensure establish evaluate examine
expand expect explain extend extract follow generate handle identify implement improve
include increase indicate inform install introduce involve maintain manage measure merge
monitor move notice obtain operate organize perform prepare prevent produce protect
provide publish reduce refer reflect reject release remain remove repeat replace require
resolve restore retain return review rotate schedule select send serve share ship show
solve sort specify store submit suggest supply support track transfer transform trigger
update upgrade validate verify write quickly slowly carefully usually often rarely always
sometimes clearly directly nearly rather simply mostly partly fully largely mainly
""".split()  # noqa: SIM905

_SYLLABLES = (  # noqa: SIM905
    "ka ro mi ve lu sa te no ri da pe zo fi gu la mo ne ta vi ru ko be si dro kla tre ven"
    " mar sol tin gor bel fen lor quin rad mur tal vex nor pil sen dak"
).split()


def _invented_terms(count: int) -> list[str]:
    rng = random.Random("headwater-bench-terms")
    terms: set[str] = set()
    while len(terms) < count:
        terms.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    ordered = sorted(terms)
    rng.shuffle(ordered)
    return ordered


_TERMS = _invented_terms(TOPICS * 24)
_TOPIC_TERMS = [_TERMS[i * 24 : (i + 1) * 24] for i in range(TOPICS)]
# Zipf-like weights over the common vocabulary: function words first, then the content
# words in a fixed shuffled order (so frequency does not follow the alphabet).
_UNIQUE = list(dict.fromkeys(_COMMON))
_TAIL = _UNIQUE[130:]
random.Random("headwater-bench-vocab").shuffle(_TAIL)
_VOCAB = _UNIQUE[:130] + _TAIL
_CUM_WEIGHTS = list(itertools.accumulate(1.0 / (rank + 8) for rank in range(len(_VOCAB))))


@dataclass(frozen=True)
class Document:
    index: int
    relpath: str  # under DIR/docs/
    title: str
    sections: list[tuple[str, list[str]]]  # (heading, paragraphs)

    @property
    def kind(self) -> str:
        return self.relpath.rsplit(".", 1)[1]


def _rng(seed: int, index: int, salt: str = "doc") -> random.Random:
    digest = hashlib.sha256(f"{salt}:{seed}:{index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _sentence(rng: random.Random, words: Iterator[str], topic: Sequence[str]) -> str:
    length = rng.randint(7, 22)
    out = [next(words) for _ in range(length)]
    for _ in range(rng.randint(0, 2)):
        out[rng.randrange(length)] = rng.choice(topic)
    if length > 12 and rng.random() < 0.4:
        out[rng.randrange(3, length - 3)] += ","
    text = " ".join(out)
    return text[0].upper() + text[1:] + rng.choice("....?")


def _paragraph(rng: random.Random, words: Iterator[str], topic: Sequence[str]) -> str:
    return " ".join(_sentence(rng, words, topic) for _ in range(rng.randint(3, 7)))


def _heading(rng: random.Random, topic: Sequence[str]) -> str:
    parts = [*rng.choices(_VOCAB[:300], k=rng.randint(2, 4)), rng.choice(topic)]
    rng.shuffle(parts)
    return " ".join(parts).capitalize()


def _word_stream(rng: random.Random) -> Iterator[str]:
    while True:
        yield from rng.choices(_VOCAB, cum_weights=_CUM_WEIGHTS, k=512)


def make_document(seed: int, index: int) -> Document:
    """Document ``index`` of the corpus with ``seed``: a pure function of both."""
    rng = _rng(seed, index)
    draw = rng.random()
    ext = "html" if draw < HTML_SHARE else "pdf" if draw < HTML_SHARE + PDF_SHARE else "md"
    # PDFs are kept shorter: rendering them is the slow part of generation.
    target = rng.randint(MIN_WORDS, 1200 if ext == "pdf" else MAX_WORDS)
    topic = _TOPIC_TERMS[rng.randrange(TOPICS)]
    words = _word_stream(rng)
    title = _heading(rng, topic)
    sections: list[tuple[str, list[str]]] = []
    count = 0
    while count < target:
        paragraphs = []
        for _ in range(rng.randint(2, 5)):
            para = _paragraph(rng, words, topic)
            paragraphs.append(para)
            count += para.count(" ") + 1
            if count >= target:
                break
        sections.append((_heading(rng, topic), paragraphs))
    relpath = f"s{index // DOCS_PER_DIR:03d}/doc-{index:06d}.{ext}"
    return Document(index, relpath, title, sections)


def new_paragraph(seed: int, salt: str, like: str) -> str:
    """A fresh paragraph of about the same length as ``like`` (for edits)."""
    rng = _rng(seed, 0, salt)
    words = _word_stream(rng)
    topic = _TOPIC_TERMS[rng.randrange(TOPICS)]
    target = like.count(" ") + 1
    out: list[str] = []
    while sum(s.count(" ") + 1 for s in out) < target:
        out.append(_sentence(rng, words, topic))
    return " ".join(out)


def render_markdown(doc: Document) -> str:
    parts = [f"# {doc.title}"]
    for heading, paragraphs in doc.sections:
        parts.append(f"## {heading}")
        parts.extend(paragraphs)
    return "\n\n".join(parts) + "\n"


def render_html(doc: Document) -> str:
    body = [f"<h1>{html.escape(doc.title)}</h1>"]
    for heading, paragraphs in doc.sections:
        body.append(f"<h2>{html.escape(heading)}</h2>")
        body.extend(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">'
        f"<title>{html.escape(doc.title)}</title></head>\n<body>\n"
        '<nav><a href="/">Home</a> | <a href="/docs">Docs</a></nav>\n<main>\n'
        + "\n".join(body)
        + "\n</main>\n<footer>Benchmark corpus</footer>\n</body>\n</html>\n"
    )


def render_pdf(doc: Document) -> bytes:
    """A plain text PDF: reportlab's canvas directly, no layout engine (fast)."""
    import textwrap

    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    pdf.setTitle(doc.title)
    lines: list[tuple[str, str]] = [("Helvetica-Bold", doc.title), ("Helvetica", "")]
    for heading, paragraphs in doc.sections:
        lines.append(("Helvetica-Bold", heading))
        for para in paragraphs:
            lines.extend(("Helvetica", line) for line in textwrap.wrap(para, 95))
            lines.append(("Helvetica", ""))
    per_page = 60
    for start in range(0, len(lines), per_page):
        y = 800.0
        for font, line in lines[start : start + per_page]:
            pdf.setFont(font, 10)
            pdf.drawString(40, y, line)
            y -= 12.5
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def write_document(docs_dir: Path, doc: Document) -> None:
    target = docs_dir / doc.relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    if doc.kind == "md":
        target.write_text(render_markdown(doc), encoding="utf-8")
    elif doc.kind == "html":
        target.write_text(render_html(doc), encoding="utf-8")
    else:
        target.write_bytes(render_pdf(doc))


def _write_range(args: tuple[str, int, int, int]) -> dict[str, int]:
    docs_dir, seed, start, stop = args
    counts = {"md": 0, "html": 0, "pdf": 0, "words": 0}
    for index in range(start, stop):
        doc = make_document(seed, index)
        write_document(Path(docs_dir), doc)
        counts[doc.kind] += 1
        counts["words"] += sum(p.count(" ") + 1 for _, ps in doc.sections for p in ps)
    return counts


def generate(out: Path, docs: int, seed: int, workers: int) -> dict[str, object]:
    if (out / "corpus.json").exists():
        raise SystemExit(f"{out} already holds a corpus; choose an empty --out")
    docs_dir = out / "docs"
    docs_dir.mkdir(parents=True, exist_ok=True)
    step = max(1, min(2000, docs // max(1, workers * 4) or 1))
    ranges = [(str(docs_dir), seed, a, min(docs, a + step)) for a in range(0, docs, step)]
    totals = {"md": 0, "html": 0, "pdf": 0, "words": 0}
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for counts in pool.map(_write_range, ranges):
            for key, value in counts.items():
                totals[key] += value
    meta: dict[str, object] = {
        "seed": seed,
        "docs": docs,
        "next_index": docs,
        "counts": totals,
        "generated_in_s": round(time.perf_counter() - started, 2),
        "mutations": 0,
    }
    (out / "corpus.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def _blocks(text: str) -> list[str]:
    return text.split("\n\n")


def mutate(directory: Path, seed: int, share: float = 0.01) -> dict[str, object]:
    """Edit one paragraph in ``share`` of the Markdown docs, delete ``share`` of all
    docs, add ``share`` new docs; record it all in ``mutations/NNN.json``."""
    meta = json.loads((directory / "corpus.json").read_text())
    docs_dir = directory / "docs"
    files = sorted(p.relative_to(docs_dir).as_posix() for p in docs_dir.rglob("*") if p.is_file())
    run = int(meta.get("mutations", 0)) + 1
    rng = random.Random(f"mutate:{meta['seed']}:{seed}:{run}")
    count = max(1, round(len(files) * share))
    markdown = [f for f in files if f.endswith(".md")]
    edited_paths = sorted(rng.sample(markdown, min(count, len(markdown))))
    rest = sorted(set(files) - set(edited_paths))
    deleted_paths = sorted(rng.sample(rest, min(count, len(rest))))

    edited = []
    for relpath in edited_paths:
        path = docs_dir / relpath
        blocks = _blocks(path.read_text(encoding="utf-8"))
        candidates = [i for i, b in enumerate(blocks) if b.strip() and not b.startswith("#")]
        which = rng.choice(candidates)
        old = blocks[which].rstrip("\n")
        new = new_paragraph(seed, f"edit:{run}:{relpath}", old)
        trailing = blocks[which][len(old) :]
        blocks[which] = new + trailing
        path.write_text("\n\n".join(blocks), encoding="utf-8")
        edited.append({"path": relpath, "block": which, "old": old, "new": new})

    for relpath in deleted_paths:
        (docs_dir / relpath).unlink()

    added = []
    start = int(meta["next_index"])
    for index in range(start, start + count):
        doc = make_document(int(meta["seed"]), index)
        write_document(docs_dir, doc)
        added.append(doc.relpath)
    meta["next_index"] = start + count
    meta["mutations"] = run

    record: dict[str, object] = {
        "run": run,
        "seed": seed,
        "docs_before": len(files),
        "docs_after": len(files) - len(deleted_paths) + len(added),
        "edited": edited,
        "deleted": deleted_paths,
        "added": added,
    }
    (directory / "mutations").mkdir(exist_ok=True)
    text = json.dumps(record, indent=1) + "\n"
    (directory / "mutations" / f"{run:03d}.json").write_text(text)
    (directory / "last-mutation.json").write_text(text)
    (directory / "corpus.json").write_text(json.dumps(meta, indent=2) + "\n")
    return record


def previous_text(current: str, edit: dict[str, object]) -> str:
    """The text an edited file had before the edit recorded in ``edit``."""
    blocks = _blocks(current)
    which = int(str(edit["block"]))
    new, old = str(edit["new"]), str(edit["old"])
    if not blocks[which].startswith(new):
        raise ValueError(f"{edit['path']}: block {which} does not hold the recorded edit")
    blocks[which] = old + blocks[which][len(new) :]
    return "\n\n".join(blocks)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write a new corpus")
    gen.add_argument("--out", type=Path, required=True)
    gen.add_argument("--docs", type=int, default=20_000)
    gen.add_argument("--seed", type=int, default=1)
    gen.add_argument("--workers", type=int, default=2)
    mut = sub.add_parser("mutate", help="edit 1%%, delete 1%%, add 1%%")
    mut.add_argument("--dir", type=Path, required=True)
    mut.add_argument("--seed", type=int, default=1)
    mut.add_argument("--share", type=float, default=0.01)
    args = parser.parse_args(argv)
    if args.command == "generate":
        meta = generate(args.out, args.docs, args.seed, args.workers)
        print(json.dumps(meta))
    else:
        record = mutate(args.dir, args.seed, args.share)
        summary = {k: record[k] for k in ("run", "docs_before", "docs_after")}
        summary.update(
            {k: len(record[k]) for k in ("edited", "deleted", "added")}  # type: ignore[arg-type]
        )
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
