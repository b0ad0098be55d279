"""Members of containers and unchunkable documents are findable as metadata-only documents.

Real files: a zip written by ``zipfile`` holding a member encrypted with the traditional
PKWARE cipher (written here from APPNOTE.TXT 6.1, and read back by ``zipfile`` with its
password), a member over the source's ``max_file_bytes``, a JSON member that does not
parse and an archive nested too deep; an mbox written by ``mailbox`` with a message too
large; a tar.gz with a member too large. Each unread member is a failure record and a
document flagged ``content: "unavailable"``, found by its name by the source's group
only; a later archive whose members read replaces them. A text over ``[chunker]
max_document_chars`` is indexed by its metadata, its failure stays open, and a redrive
after raising the limit indexes its text.
"""

from __future__ import annotations

import io
import mailbox
import struct
import tarfile
import zipfile
import zlib
from email.message import EmailMessage
from pathlib import Path

from headwater import Workspace
from headwater.connectors._archives import container_items
from headwater.pipeline.parse import ContainerLimits
from headwater.types import Failure, SourceDocument
from workspace_helpers import filesystem_source, write_config

BIG = b"widget " * 20_000  # 140,000 bytes: over max_file_bytes = 100000


def _keys(password: bytes) -> list[int]:
    keys = [0x12345678, 0x23456789, 0x34567890]
    for byte in password:
        _update(keys, byte)
    return keys


def _update(keys: list[int], byte: int) -> None:
    keys[0] = zlib.crc32(bytes([byte]), keys[0] ^ 0xFFFFFFFF) ^ 0xFFFFFFFF
    keys[1] = (keys[1] + (keys[0] & 0xFF)) & 0xFFFFFFFF
    keys[1] = (keys[1] * 134775813 + 1) & 0xFFFFFFFF
    keys[2] = zlib.crc32(bytes([keys[1] >> 24]), keys[2] ^ 0xFFFFFFFF) ^ 0xFFFFFFFF


def zipcrypto(data: bytes, password: bytes, crc: int) -> bytes:
    """``data`` encrypted with the traditional PKWARE cipher (APPNOTE.TXT 6.1)."""
    keys = _keys(password)
    header = bytes(11) + bytes([crc >> 24])  # the last header byte checks the password
    out = bytearray()
    for plain in header + data:
        temp = (keys[2] | 2) & 0xFFFF
        out.append(plain ^ (((temp * (temp ^ 1)) >> 8) & 0xFF))
        _update(keys, plain)
    return bytes(out)


def encrypted_zip(files: dict[str, bytes], secret: dict[str, bytes]) -> bytes:
    """A zip of ``files`` and, stored with the PKWARE cipher, ``secret`` (password pw)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    body = buffer.getvalue()
    end = body.rindex(b"PK\x05\x06")
    count, _size, start = struct.unpack("<HII", body[end + 10 : end + 20])
    local, central = body[:start], body[start:end]
    for name, data in secret.items():
        crc = zlib.crc32(data)
        sealed = zipcrypto(data, b"pw", crc)
        encoded = name.encode()
        fixed = struct.pack(
            "<HHHHHIIIHH", 20, 1, 0, 0, 0, crc, len(sealed), len(data), len(encoded), 0
        )
        offset = len(local)
        local += b"PK\x03\x04" + fixed + encoded + sealed
        made_by = struct.pack("<H", 20)
        central += (
            b"PK\x01\x02" + made_by + fixed + struct.pack("<HHHII", 0, 0, 0, 0, offset) + encoded
        )
        count += 1
    tail = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, count, count, len(central), len(local), 0)
    whole = local + central + tail
    with zipfile.ZipFile(io.BytesIO(whole)) as check:  # a real encrypted member
        for name, data in secret.items():
            assert check.getinfo(name).flag_bits & 0x1
            assert check.read(name, pwd=b"pw") == data
    return whole


def plain_zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def tar_gz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def mbox(path: Path, bodies: dict[str, str]) -> None:
    box = mailbox.mbox(str(path))
    for message_id, body in bodies.items():
        msg = EmailMessage()
        msg["From"] = "alice@example.org"
        msg["Subject"] = f"About {message_id}"
        msg["Message-ID"] = f"<{message_id}@example.org>"
        msg.set_content(body)
        box.add(msg)
    box.flush()
    box.close()


def test_unread_members_are_metadata_only_documents_until_they_read(
    tmp_path: Path, manifest_url: str
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    nested = plain_zip({"deeper.zip": plain_zip({"z.txt": b"too deep"})})
    (corpus / "bundle.zip").write_bytes(
        encrypted_zip(
            {
                "guide.md": b"# Guide\n\nThe lighthouse keeper's guide.",
                "inventory-dump.log": BIG,
                "settings-broken.json": b'{"name": ',
                "deep.zip": nested,
            },
            {"payroll-2024.txt": b"payroll figures for the harbour crew"},
        )
    )
    mbox(corpus / "team.mbox", {"small": "Lunch at noon.", "attachment-heavy": "x " * 70_000})
    (corpus / "logs.tar.gz").write_bytes(tar_gz({"trace-huge.txt": BIG, "ok.txt": b"calm seas"}))
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(
            corpus,
            access='{ groups = ["hr"] }',
            extra="max_file_bytes = 100000\nprune_max_fraction = 0.5",
        ),
    )
    unread = {
        "bundle.zip!/payroll-2024.txt": ("fetch", "encrypted"),
        "bundle.zip!/inventory-dump.log": ("fetch", "too_large"),
        "bundle.zip!/settings-broken.json": ("parse", "parse_error"),
        "bundle.zip!/deep.zip!/deeper.zip": ("fetch", "too_large"),
        "logs.tar.gz!/trace-huge.txt": ("fetch", "too_large"),
    }
    whole = {"team.mbox!/": ("fetch", "too_large")}  # the mailbox file is over the cap
    with Workspace.open(config) as ws:
        ws.sync()
        failures = {f.object_id: (f.stage, f.error_class) for f in ws.failures()}
        assert failures == unread | whole
        for object_id, (_, error_class) in unread.items():
            doc = ws.document(source="docs", object_id=object_id).as_dict()
            assert doc["state"] == "active" and doc["content"] == "unavailable", object_id
            assert doc["content_reason"].startswith(f"{error_class}: ")
            assert doc["metadata"]["container"] == object_id.split("!/")[0]
            assert doc["indexes"]["main"]["chunks"] == 1
        mailbox_file = ws.document(source="docs", object_id="team.mbox").as_dict()
        assert mailbox_file["content"] == "unavailable"
        assert "max_file_bytes" in mailbox_file["content_reason"]
        payroll = ws.document(source="docs", object_id="bundle.zip!/payroll-2024.txt").as_dict()
        assert payroll["title"] == "payroll-2024.txt"
        assert payroll["metadata"]["size"] == "36"  # the member's own size, unpacked
        assert "password" in payroll["content_reason"]
        for name in ("payroll-2024", "inventory-dump", "settings-broken", "trace-huge", "team"):
            (hit,) = ws.search(name, groups=["hr"], mode="keyword", k=1)
            assert name in hit["locator"] and "Content unavailable (" in hit["chunk"]
            assert ws.search(name, groups=["staff"], mode="keyword", k=1) == []
        assert ws.search("lighthouse keeper", groups=["hr"], mode="keyword", k=1)
        again = ws.sync().runs[0]
        assert (again.counts.new, again.counts.changed) == (0, 0)
        assert len(ws.failures()) == len(unread) + 1
        (corpus / "bundle.zip").write_bytes(
            plain_zip(
                {
                    "guide.md": b"# Guide\n\nThe lighthouse keeper's guide.",
                    "payroll-2024.txt": b"payroll figures for the harbour crew",
                    "settings-broken.json": b'{"name": "repaired settings"}',
                }
            )
        )
        ws.sync()
        for object_id in ("bundle.zip!/payroll-2024.txt", "bundle.zip!/settings-broken.json"):
            fixed = ws.document(source="docs", object_id=object_id).as_dict()
            assert fixed["content"] == "available" and "content" not in fixed["metadata"]
        gone = ws.document(source="docs", object_id="bundle.zip!/inventory-dump.log")
        assert gone.record.state == "deleted"  # it left the archive
        (hit,) = ws.search("payroll harbour crew", groups=["hr"], mode="keyword", k=1)
        assert "Content unavailable" not in hit["chunk"]
        assert {f.object_id for f in ws.failures()} == {
            "team.mbox!/",
            "logs.tar.gz!/trace-huge.txt",
        }
        (corpus / "team.mbox").unlink()
        mbox(corpus / "team.mbox", {"small": "Lunch at noon."})  # under the cap: read
        ws.sync()
        assert ws.document(source="docs", object_id="team.mbox").record.state == "deleted"
        small = ws.document(source="docs", object_id="team.mbox!/small@example.org")
        assert small.record.state == "active"
        assert ws.search("lunch noon", groups=["hr"], mode="keyword", k=1)


def test_a_message_over_the_cap_carries_what_is_known_of_it(tmp_path: Path) -> None:
    path = tmp_path / "team.mbox"
    mbox(path, {"small": "Lunch at noon.", "attachment-heavy": "x " * 5_000})
    items = list(
        container_items(
            path.read_bytes(),
            object_id="team.mbox",
            locator=str(path),
            updated_at=None,
            metadata={"path": "team.mbox"},
            limits=ContainerLimits(max_member_bytes=2_000),
        )
    )
    small, heavy = items
    assert isinstance(small, SourceDocument) and small.object_id == "team.mbox!/small@example.org"
    assert isinstance(heavy, Failure) and heavy.error_class == "too_large"
    assert heavy.document is not None and heavy.document.object_id == heavy.object_id
    assert heavy.document.size is not None and heavy.document.size > 10_000
    assert heavy.document.metadata["container"] == "team.mbox"


def test_a_text_too_long_to_chunk_is_indexed_by_its_metadata_until_redriven(
    tmp_path: Path, manifest_url: str
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "changelog-giant.txt").write_text("release notes for the tide tables. " * 100)
    (corpus / "fine.md").write_text("# Fine\n\nA readable note.")

    def configure(limit: int, on_failure: bool = True) -> Path:
        extra = f"[chunker]\nmax_document_chars = {limit}\n"
        extra += f"[parse]\nmetadata_only_on_failure = {str(on_failure).lower()}\n"
        sources = filesystem_source(corpus, access='{ groups = ["hr"] }')
        return write_config(tmp_path, manifest_url=manifest_url, sources=sources, extra=extra)

    with Workspace.open(configure(1000)) as ws:
        ws.sync()
        (failure,) = ws.failures()
        assert (failure.object_id, failure.stage, failure.error_class) == (
            "changelog-giant.txt",
            "chunk",
            "too_large",
        )
        (hit,) = ws.search("changelog-giant", groups=["hr"], mode="keyword", k=1)
        assert "Content unavailable (too_large: " in hit["chunk"]
        assert "max_document_chars" in hit["chunk"]
        assert ws.search("tide tables", groups=["hr"], mode="keyword", k=1) == []
        assert ws.search("changelog-giant", groups=["staff"], mode="keyword", k=1) == []
        doc = ws.document(source="docs", object_id="changelog-giant.txt").as_dict()
        assert doc["content"] == "available"  # the manifest holds its text
        assert doc["indexes"]["main"]["chunks"] == 1  # the index, its metadata
        ws.sync()  # nothing changes, and the failure stays open
        assert [f.object_id for f in ws.failures()] == ["changelog-giant.txt"]
        assert ws.search("changelog-giant", groups=["hr"], mode="keyword", k=1)
    with Workspace.open(configure(100_000)) as ws:
        report = ws.redrive([], stage="chunk")
        assert report.as_dict()["resolved"] == 1
        assert ws.failures() == []
        (hit,) = ws.search("tide tables", groups=["hr"], mode="keyword", k=1)
        assert "changelog-giant.txt" in hit["locator"]
        assert "Content unavailable" not in hit["chunk"]


def test_no_metadata_stand_in_for_an_unchunkable_text_when_turned_off(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "changelog-giant.txt").write_text("release notes for the tide tables. " * 100)
    config = write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(
            corpus, extra="[source.parse]\nmetadata_only_on_failure = false\n"
        ),
        extra="[chunker]\nmax_document_chars = 1000\n",
    )
    with Workspace.open(config) as ws:
        ws.sync()
        assert [f.stage for f in ws.failures()] == ["chunk"]
        assert ws.search("changelog-giant", groups=["staff"], mode="keyword", k=1) == []


def test_the_hooks_run_on_the_metadata_that_stands_in(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "notes-grace.hopper@example.org.txt").write_text("tide tables. " * 200)
    config = write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(corpus),
        extra='[chunker]\nmax_document_chars = 1000\n[[hooks]]\nname = "redact"\nkinds = ["email"]\n',
    )
    with Workspace.open(config) as ws:
        ws.sync()
        assert [f.stage for f in ws.failures()] == ["chunk"]
        (hit,) = ws.search("content unavailable", groups=["staff"], mode="keyword", k=1)
        assert "Content unavailable (too_large: " in hit["chunk"]
        assert "[REDACTED:email]" in hit["chunk"] and "grace.hopper" not in hit["chunk"]
