"""Share of a real documentation tree that parses: the first 2,000 files of /usr/share/doc.

Copies the first N regular files under a root (sorted walk, symbolic links skipped) into a
scratch directory with their relative paths, then runs Headwater's parse step on each
exactly as a filesystem sync does (the relative path as the name, no media type) and
reports the share parsed with content and the failures per class, with the extensions
(or inner names) behind each, plus documents/s and MB/s (of the file's bytes, packed for a
compressed file; the text that came out is shown beside) per parser. Only ``parse`` is
used, so the same script measures an older checkout:

    PYTHONPATH=src .venv/bin/python bench/formats.py              # this tree
    PYTHONPATH=/path/to/main/src .venv/bin/python bench/formats.py  # before
    .venv/bin/python bench/formats.py --root /usr/share/doc --files 2000 --json out.json
    .venv/bin/python bench/formats.py --office   # generated xlsx, pptx, eml: speed and peak
    .venv/bin/python bench/formats.py --ocr 10   # OCR pages/s: 10 page images, one scanned PDF

``--office`` writes one large file of each office format with its own library (20,000
rows x 6 columns, 300 slides, a 2,000-paragraph message) and reports parse seconds, MB/s
and, in a second parse, the peak of Python allocations (``tracemalloc``, which slows
the parse several times, so it is not timed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path, PurePosixPath


def first_files(root: Path, count: int) -> list[Path]:
    found: list[Path] = []
    for directory, subdirs, files in os.walk(root):
        subdirs.sort()
        for name in sorted(files):
            path = Path(directory) / name
            if path.is_symlink() or not path.is_file():
                continue
            found.append(path)
            if len(found) == count:
                return found
    return found


def kind_of(name: str) -> str:
    """What a failure is about: the extension, of the inner name for a compressed file."""
    path = PurePosixPath(name)
    if path.suffix.lower() in (".gz", ".bz2", ".xz"):
        inner = path.with_suffix("")
        return f"{inner.suffix or '(none)'}{path.suffix}"
    return path.suffix or "(none)"


def measure(root: Path, count: int) -> dict[str, object]:
    from headwater.errors import ItemError
    from headwater.pipeline.parse import parse

    files = first_files(root, count)
    outcomes: Counter[str] = Counter()
    failure_kinds: dict[str, Counter[str]] = defaultdict(Counter)
    examples: dict[str, list[str]] = defaultdict(list)
    per_parser: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    with tempfile.TemporaryDirectory(prefix="hw-formats-") as scratch:
        for source in files:
            relative = source.relative_to(root)
            copy = Path(scratch) / relative
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, copy)
        started = time.perf_counter()
        for source in files:
            relative = str(source.relative_to(root))
            content = (Path(scratch) / relative).read_bytes()
            began = time.perf_counter()
            try:
                parsed = parse(content, name=relative, media_type=None)
            except ItemError as exc:
                outcomes[exc.error_class] += 1
                failure_kinds[exc.error_class][kind_of(relative)] += 1
                if len(examples[exc.error_class]) < 5:
                    examples[exc.error_class].append(f"{relative}: {str(exc)[:160]}")
                continue
            stats = per_parser[parsed.parser]
            stats[0] += 1
            stats[1] += len(content)
            stats[2] += time.perf_counter() - began
            stats[3] += len(parsed.text.encode())
            outcomes["parsed"] += 1
        elapsed = time.perf_counter() - started
    total = len(files)
    return {
        "root": str(root),
        "files": total,
        "parsed_share": outcomes["parsed"] / total if total else 0.0,
        "outcomes": dict(outcomes.most_common()),
        "failures_by_kind": {k: dict(v.most_common()) for k, v in failure_kinds.items()},
        "examples": dict(examples),
        "parse_seconds": round(elapsed, 2),
        "parsers": {
            name: {
                "documents": int(n),
                "mb": round(size / 1e6, 2),
                "text_mb": round(text / 1e6, 2),
                "docs_per_s": round(n / secs, 1) if secs else None,
                "mb_per_s": round(size / 1e6 / secs, 2) if secs else None,
            }
            for name, (n, size, secs, text) in sorted(per_parser.items())
        },
    }


def office() -> dict[str, dict[str, float]]:
    import io
    import tracemalloc
    from email.message import EmailMessage

    from openpyxl import Workbook
    from pptx import Presentation

    from headwater.pipeline.parse import parse

    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet("Orders")
    sheet.append(["Order", "Customer", "Region", "Product", "Quantity", "Price"])
    for n in range(20_000):
        sheet.append([n, f"customer {n % 997}", ["North", "South", "East", "West"][n % 4],
                      f"product {n % 101}", n % 17, round(n * 0.37, 2)])  # fmt: skip
    xlsx = io.BytesIO()
    workbook.save(xlsx)
    deck = Presentation()
    for n in range(300):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide {n}: quarterly review"
        slide.placeholders[1].text = "\n".join(f"point {n}.{k} about revenue" for k in range(6))
        slide.notes_slide.notes_text_frame.text = f"Speaker notes for slide {n}."
    pptx = io.BytesIO()
    deck.save(pptx)
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "a@example.org", "b@example.org", "Long thread"
    msg.set_content("\n\n".join(f"Paragraph {n} of a long message body." for n in range(2000)))
    samples = {
        "orders.xlsx": xlsx.getvalue(),
        "deck.pptx": pptx.getvalue(),
        "thread.eml": msg.as_bytes(),
    }
    results: dict[str, dict[str, float]] = {}
    for name, content in samples.items():
        began = time.perf_counter()
        parsed = parse(content, name=name, media_type=None)
        seconds = time.perf_counter() - began
        tracemalloc.start()
        parse(content, name=name, media_type=None)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        results[name] = {
            "mb_in": round(len(content) / 1e6, 2),
            "mb_text": round(len(parsed.text.encode()) / 1e6, 2),
            "seconds": round(seconds, 2),
            "mb_in_per_s": round(len(content) / 1e6 / seconds, 2),
            "peak_mb": round(peak / 1e6, 1),
        }
    return results


def ocr_pages(pages: int) -> dict[str, dict[str, float]]:
    """OCR speed: ``pages`` page images (A4 at 150 dpi, 30 lines of words drawn with
    Pillow), each as a PNG and all as one scanned PDF (reportlab, no text layer), parsed
    with ``[parse] ocr = true`` (Tesseract); pages/s and the words read back."""
    import io

    from PIL import Image, ImageDraw, ImageFont
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    from headwater.pipeline.parse import ParseOptions, parse

    font = ImageFont.load_default(28)
    words = [
        "harbour",
        "inspection",
        "quarterly",
        "report",
        "lighthouse",
        "keeper",
        "tide",
        "schedule",
    ]
    images = []
    for n in range(pages):
        image = Image.new("L", (1240, 1754), "white")
        draw = ImageDraw.Draw(image)
        for line in range(30):
            text = " ".join(words[(n + line + k) % len(words)] for k in range(9))
            draw.text((90, 90 + line * 52), text, fill="black", font=font)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        images.append(buffer.getvalue())
    pdf_buffer = io.BytesIO()
    pdf = canvas.Canvas(pdf_buffer, pagesize=A4, invariant=1)
    for png in images:
        pdf.drawImage(ImageReader(io.BytesIO(png)), 0, 0, width=A4[0], height=A4[1])
        pdf.showPage()
    pdf.save()
    options = ParseOptions(ocr=True, time_budget_s=3600.0)  # the speed, not the budget
    results: dict[str, dict[str, float]] = {}
    began = time.perf_counter()
    read = sum(len(parse(png, name=f"p{n}.png", media_type=None, options=options).text.split())
               for n, png in enumerate(images))  # fmt: skip
    seconds = time.perf_counter() - began
    results["png pages"] = {"pages": pages, "seconds": round(seconds, 2),
                            "pages_per_s": round(pages / seconds, 2), "words": read}  # fmt: skip
    began = time.perf_counter()
    text = parse(pdf_buffer.getvalue(), name="scan.pdf", media_type=None, options=options).text
    seconds = time.perf_counter() - began
    results["scanned pdf"] = {"pages": pages, "seconds": round(seconds, 2),
                              "pages_per_s": round(pages / seconds, 2),
                              "words": len(text.split())}  # fmt: skip
    results["expected words per page"] = {"words": 30 * 9}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--office", action="store_true", help="generated office files instead")
    parser.add_argument("--ocr", type=int, default=0, help="OCR speed on N generated pages")
    args = parser.parse_args()
    if args.office or args.ocr:
        figures = ocr_pages(args.ocr) if args.ocr else office()
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2))
        for name, row in figures.items():
            print(name, row)
        return
    result = measure(args.root, args.files)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    total = int(result["files"])  # type: ignore[call-overload]
    outcomes: dict[str, int] = result["outcomes"]  # type: ignore[assignment]
    print(f"{total} files under {result['root']}; parse step {result['parse_seconds']} s")
    for outcome, n in outcomes.items():
        kinds = result["failures_by_kind"].get(outcome, {})  # type: ignore[attr-defined]
        detail = ", ".join(f"{k} {v}" for k, v in list(kinds.items())[:8])
        print(f"  {outcome:16} {n:5}  {n / total:6.1%}  {detail}")
    print("parser          docs   MB in  MB text   docs/s  MB in/s")
    for name, stats in result["parsers"].items():  # type: ignore[attr-defined]
        print(
            f"  {name:12} {stats['documents']:6} {stats['mb']:7} {stats['text_mb']:8} "
            f"{stats['docs_per_s']!s:>8} {stats['mb_per_s']!s:>8}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
