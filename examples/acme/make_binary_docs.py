"""Generate the demo corpus's PDF and DOCX documents from the text kept in this script.

The idea: binary formats are part of the demo (the parsers must handle them), but binary
files cannot be reviewed in a diff, so their text lives here and the files are generated
from it. Output is byte-for-byte reproducible (reportlab's invariant mode, fixed DOCX core
properties and zip timestamps), so re-running the script changes nothing in git unless the
text changed. The generated files are committed; run this again after editing a text:

    .venv/bin/python examples/acme/make_binary_docs.py
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parent / "docs"
FIXED_TIME = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Doc:
    path: str  # relative to docs/, extension picks the format
    title: str
    sections: list[tuple[str, list[str]]]  # (heading, paragraphs)


# fmt: off
DOCUMENTS: list[Doc] = [
    Doc(
        "public/warranty-policy.pdf",
        "Rover X2 Limited Warranty",
        [
            ("Coverage", [
                "Acme Robotics warrants every Rover X2 robot and DS-4 docking station against "
                "defects in materials and workmanship for 24 months from the date of "
                "commissioning at the customer site.",
                "The battery pack is covered for 36 months or 4,000 charge cycles, whichever "
                "comes first, and is replaced free of charge if its capacity falls below 70% "
                "within that period.",
            ]),
            ("What is not covered", [
                "Damage from collisions with forklifts or other vehicles, water ingress above "
                "the IP54 rating, use of non-Acme chargers, and wear parts such as drive wheels "
                "and bumpers are not covered.",
            ]),
            ("How to make a claim", [
                "Open a warranty claim in the Fleet Console under Support > Warranty with the "
                "robot serial number and the fault code. Acme ships a replacement part within "
                "two business days; defective parts must be returned within 30 days using the "
                "prepaid label.",
            ]),
        ],
    ),
    Doc(
        "public/rover-x2-datasheet.pdf",
        "Rover X2 Technical Datasheet",
        [
            ("Dimensions and payload", [
                "Footprint 780 mm by 560 mm, height 410 mm, weight 96 kg. Rated payload 150 kg "
                "on the tote deck and 220 kg with the reinforced pallet deck.",
            ]),
            ("Performance", [
                "Maximum speed 2.0 m/s unloaded and 1.2 m/s above 120 kg. Positioning accuracy "
                "plus or minus 10 mm at docking stations. Turning radius zero (differential "
                "drive).",
            ]),
            ("Sensors and safety", [
                "Two 270-degree safety lidars, a forward depth camera, floor fiducial reader, "
                "and bumper switches. Certified to ISO 3691-4 and CE marked.",
            ]),
            ("Power", [
                "48 V lithium iron phosphate battery, 2.4 kWh, 11 hours of mixed operation, "
                "opportunity charging on the DS-4 dock at up to 1.5 kW.",
            ]),
        ],
    ),
    Doc(
        "public/customer-onboarding-guide.docx",
        "Customer Onboarding Guide",
        [
            ("Two weeks to first pick", [
                "A typical Rover X2 deployment goes live two weeks after the robots arrive. "
                "Week one is the site survey, map building and fiducial installation; week two "
                "is integration with your warehouse management system and supervised operation.",
            ]),
            ("What we need from you", [
                "A site contact with authority to make layout decisions, Wi-Fi coverage at the "
                "docking stations, 16 A power outlets for each DS-4 dock, and a test environment "
                "of your warehouse management system.",
            ]),
            ("Training", [
                "We train your shift supervisors on the Fleet Console in a four-hour session and "
                "your maintenance technicians in a one-day hands-on course.",
            ]),
        ],
    ),
    Doc(
        "staff/procurement-policy.pdf",
        "Procurement Policy",
        [
            ("Purchase orders", [
                "Any purchase from a new vendor, and any purchase over $5,000, needs a purchase "
                "order in Coupa before the vendor is engaged. Purchases over $50,000 need three "
                "competing quotes, or a written sole-source justification.",
            ]),
            ("Approvals", [
                "Up to $5,000: budget owner. Up to $50,000: department head. Up to $250,000: CFO. "
                "Above $250,000: CEO and CFO together.",
            ]),
            ("Vendor security review", [
                "Software vendors that will process customer data or connect to production "
                "systems must pass a security review by the security team before the contract "
                "is signed. Allow three weeks.",
            ]),
        ],
    ),
    Doc(
        "staff/travel-policy.docx",
        "Business Travel Policy",
        [
            ("Booking", [
                "Book all flights, hotels and rental cars through Navan so that we can reach you "
                "in an emergency. Book flights at least 14 days ahead when you can.",
            ]),
            ("Class of travel", [
                "Economy class for flights under six hours; premium economy for longer flights. "
                "Business class is not reimbursed unless the CEO approves it in advance.",
            ]),
            ("Hotels", [
                "Up to $250 per night in major US cities and $180 elsewhere; up to EUR 200 per "
                "night in Europe. Stay at the customer's recommended hotel when they have one.",
            ]),
            ("Travel safety", [
                "Field engineers visiting customer sites must wear safety shoes and a high-"
                "visibility vest, and follow the site's own safety induction.",
            ]),
        ],
    ),
    Doc(
        "staff/code-of-conduct.docx",
        "Code of Conduct",
        [
            ("Respect", [
                "We treat colleagues, customers and partners with respect. Harassment and "
                "discrimination of any kind are not tolerated, in the office, at customer sites "
                "and online.",
            ]),
            ("Gifts and conflicts of interest", [
                "You may accept gifts worth up to $100 per year from any one vendor or customer. "
                "Declare any financial interest in a vendor, customer or competitor to Legal.",
            ]),
            ("Speaking up", [
                "Report concerns to your manager, People Operations, or anonymously through the "
                "EthicsPoint hotline. Acme does not tolerate retaliation against anyone who "
                "reports a concern in good faith.",
            ]),
        ],
    ),
    Doc(
        "engineering/api-rate-limits.pdf",
        "Fleet API Rate Limits and Quotas",
        [
            ("Default limits", [
                "Each customer API key may make 600 requests per minute with a burst of 100. "
                "Task creation is limited to 50 tasks per second per site.",
            ]),
            ("Responses", [
                "A request over the limit gets HTTP 429 with a Retry-After header in seconds. "
                "Clients must back off exponentially with jitter; the official SDKs do this.",
            ]),
            ("Raising a limit", [
                "Customer success can raise a customer's limit up to 3,000 requests per minute "
                "through the admin panel. Anything higher needs a capacity review by the "
                "platform team, because the traffic manager shares the database.",
            ]),
        ],
    ),
    Doc(
        "engineering/firmware-release-checklist.docx",
        "Rover Firmware Release Checklist",
        [
            ("Before the release", [
                "All hardware-in-the-loop tests pass on the three reference robots. The safety "
                "team has signed off on any change under robot/safety. Release notes list every "
                "change to docking, navigation or battery management.",
            ]),
            ("Staged rollout", [
                "Roll out to the internal test warehouse for 48 hours, then to a 10% canary of "
                "robots at each customer site for 24 hours, then to the rest of the fleet. "
                "Stop the rollout if docking failures rise above 0.5% or any safety stop is "
                "unexplained.",
            ]),
            ("Rollback", [
                "Every robot keeps the previous firmware in its second partition. Roll back from "
                "the Fleet Console with Firmware > Revert, per site or for the whole fleet.",
            ]),
        ],
    ),
    Doc(
        "hr/benefits-overview.pdf",
        "Benefits Overview 2026",
        [
            ("Health", [
                "Acme pays 100% of the medical, dental and vision premium for employees and 80% "
                "for dependents. Coverage starts on the first day of employment.",
            ]),
            ("Retirement", [
                "The 401(k) plan matches 100% of contributions up to 4% of salary, vested "
                "immediately.",
            ]),
            ("Learning and wellbeing", [
                "Each employee has a learning budget of $1,500 per year for courses, books and "
                "conferences, and a $60 monthly wellness stipend for gyms or fitness classes.",
            ]),
        ],
    ),
    Doc(
        "hr/parental-leave.docx",
        "Parental Leave Policy",
        [
            ("Paid leave", [
                "Birthing parents get 20 weeks of fully paid parental leave; non-birthing "
                "parents, adoptive and foster parents get 16 weeks. Leave can be taken in up to "
                "three blocks within 12 months of the birth or placement.",
            ]),
            ("Returning to work", [
                "Parents may return at 60% of their hours for the first four weeks back at full "
                "pay. Lactation rooms are available in the Portland office and the Gresham plant.",
            ]),
            ("How to apply", [
                "Tell People Operations at least 30 days before the leave starts, where you can. "
                "People Operations coordinates with Oregon Paid Leave and your manager.",
            ]),
        ],
    ),
]
# fmt: on


def write_pdf(doc: Doc, target: Path) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer

    styles = getSampleStyleSheet()
    story: list[object] = [Paragraph(doc.title, styles["Title"])]
    for heading, paragraphs in doc.sections:
        story.append(Paragraph(heading, styles["Heading2"]))
        for text in paragraphs:
            story.append(Paragraph(text, styles["BodyText"]))
            story.append(Spacer(1, 6))
    buffer = io.BytesIO()
    template = SimpleDocTemplate(
        buffer, pagesize=A4, title=doc.title, author="Acme Robotics", invariant=1
    )
    template.build(story)
    target.write_bytes(buffer.getvalue())


def write_docx(doc: Doc, target: Path) -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = doc.title
    document.core_properties.author = "Acme Robotics"
    document.core_properties.created = FIXED_TIME
    document.core_properties.modified = FIXED_TIME
    document.core_properties.last_modified_by = "Acme Robotics"
    document.core_properties.revision = 1
    document.add_heading(doc.title, level=0)
    for heading, paragraphs in doc.sections:
        document.add_heading(heading, level=1)
        for text in paragraphs:
            document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    target.write_bytes(_normalize_zip(buffer.getvalue()))


def _normalize_zip(data: bytes) -> bytes:
    """Rewrite a zip with fixed member timestamps so the bytes are reproducible."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(2026, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            dst.writestr(fixed, src.read(info.filename))
    return out.getvalue()


def main() -> None:
    for doc in DOCUMENTS:
        target = DOCS / doc.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.suffix == ".pdf":
            write_pdf(doc, target)
        elif target.suffix == ".docx":
            write_docx(doc, target)
        else:
            raise ValueError(f"{doc.path}: expected a .pdf or .docx path")
        print(f"wrote {target.relative_to(DOCS.parent)} ({target.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
