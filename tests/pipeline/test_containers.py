"""Mailboxes and archives as containers: each member a document with its own id.

Real files: an mbox written by the stdlib ``mailbox``, zip archives by ``zipfile`` and a
tar.gz by ``tarfile``. The reader is checked on its own (ids, limits, nesting), then a
real workspace syncs a folder of them: each member's phrase is found, a second sync
changes nothing, and a member taken out of its archive leaves the index.
"""

from __future__ import annotations

import io
import mailbox
import tarfile
import zipfile
from email.message import EmailMessage
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.errors import ItemError
from headwater.pipeline.parse import ContainerLimits, Member, MemberFailure, members
from headwater.pipeline.parse._zip import ZipLimits
from workspace_helpers import filesystem_source, write_config


def message(subject: str, body: str, message_id: str | None) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "alice@example.org"
    msg["To"] = "bob@example.org"
    msg["Subject"] = subject
    if message_id:
        msg["Message-ID"] = message_id
    msg.set_content(body)
    return msg


def make_mbox(path: Path, messages: list[EmailMessage]) -> None:
    box = mailbox.mbox(str(path))
    for msg in messages:
        box.add(msg)
    box.flush()
    box.close()


def make_zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def make_tar_gz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_an_mbox_gives_one_member_per_message_named_by_message_id(tmp_path: Path) -> None:
    path = tmp_path / "team.mbox"
    make_mbox(
        path,
        [
            message("Launch", "The launch is on Monday.", "<launch-1@example.org>"),
            message("Lunch", "Lunch is at noon.", None),
            message("Launch again", "Repeated id.", "<launch-1@example.org>"),
        ],
    )
    found = list(members(path.read_bytes(), "team.mbox"))
    assert all(isinstance(m, Member) for m in found)
    paths = [m.path for m in found]
    assert paths[0] == "launch-1@example.org"
    assert paths[1].startswith("sha256:")
    assert paths[2] == "launch-1@example.org#2"
    assert b"noon" in found[1].content and found[1].media_type == "message/rfc822"
    assert [m.path for m in members(path.read_bytes(), "team.mbox")] == paths  # stable


def test_zip_and_tar_members_nested_archives_and_limits() -> None:
    inner = make_zip({"deep.md": b"# Deep\n\nnested text"})
    outer = make_zip({"a.md": b"alpha", "dir/b.txt": b"beta", "inner.zip": inner})
    found = {m.path: m for m in members(outer, "docs.zip")}
    assert set(found) == {"a.md", "dir/b.txt", "inner.zip!/deep.md"}
    tar = make_tar_gz({"./notes/c.txt": b"gamma"})
    assert [m.path for m in members(tar, "bundle.tar.gz")] == ["notes/c.txt"]
    # one level of containers inside a container: the next is a member failure
    nested = make_zip({"x.zip": make_zip({"y.zip": make_zip({"z.txt": b"z"})})})
    (failure,) = members(nested, "n.zip")
    assert isinstance(failure, MemberFailure) and failure.path == "x.zip!/y.zip"
    assert failure.error.error_class == "too_large"
    # the per-member cap: that member fails, the others are read
    small = ContainerLimits(max_member_bytes=10)
    out = list(members(make_zip({"big.txt": b"x" * 11, "ok.txt": b"ok"}), "m.zip", small))
    assert isinstance(out[0], MemberFailure) and out[0].error.error_class == "too_large"
    assert isinstance(out[1], Member) and out[1].path == "ok.txt"
    # whole-container limits: member count, and a tar bomb's declared total
    few = ContainerLimits(zip=ZipLimits(max_entries=2))
    with pytest.raises(ItemError) as count:
        list(members(make_zip({f"{i}.txt": b"t" for i in range(3)}), "c.zip", few))
    assert count.value.error_class == "too_large"
    bomb = make_tar_gz({"zeros.txt": b"\0" * (3 * 1024 * 1024)})
    with pytest.raises(ItemError) as ratio:
        list(members(bomb, "bomb.tar.gz"))
    assert ratio.value.error_class == "too_large" and "bomb" in str(ratio.value)
    with pytest.raises(ItemError) as broken:
        list(members(outer[: len(outer) // 2], "cut.zip"))
    assert broken.value.error_class == "parse_error"


def test_members_are_searchable_documents_and_leave_with_their_archive(
    tmp_path: Path, manifest_url: str
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    make_mbox(
        corpus / "team.mbox",
        [
            message("Launch", "The rocket launch is on Monday.", "<launch-1@example.org>"),
            message("Lunch", "Lunch with the quartermaster at noon.", None),
        ],
    )
    (corpus / "docs.zip").write_bytes(
        make_zip({"guide/a.md": b"# Alpha\n\nzebra crossing manual", "b.txt": b"walrus habits"})
    )
    (corpus / "bundle.tar.gz").write_bytes(make_tar_gz({"c.txt": b"narwhal migration"}))
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus, access="{ public = true }"),
    )
    with Workspace.open(config) as ws:
        (run,) = ws.sync().runs
        assert ws.failures() == []
        assert run.counts.new == 5
        expected = {
            "rocket launch": "team.mbox!/launch-1@example.org",
            "quartermaster": "team.mbox!/sha256:",
            "zebra crossing": "docs.zip!/guide/a.md",
            "walrus": "docs.zip!/b.txt",
            "narwhal": "bundle.tar.gz!/c.txt",
        }
        for phrase, object_id in expected.items():
            (hit,) = ws.search(phrase, mode="keyword", k=1)
            assert object_id in hit["locator"], (phrase, hit)
        mail = ws.document(source="docs", object_id="team.mbox!/launch-1@example.org")
        assert mail.record.title == "Launch"
        assert mail.record.metadata["container"] == "team.mbox"
        again = ws.sync().runs[0]
        assert (again.counts.unchanged, again.counts.changed, again.counts.new) == (5, 0, 0)
        (corpus / "docs.zip").write_bytes(
            make_zip({"guide/a.md": b"# Alpha\n\nzebra crossing manual"})
        )
        ws.sync()
        assert ws.search("walrus", mode="keyword", k=1) == []
        gone = ws.document(source="docs", object_id="docs.zip!/b.txt")
        assert gone.record.state == "deleted"
        assert ws.search("zebra crossing", mode="keyword", k=1)
        # a damaged archive is one failure over its members, and deletes none of them
        (corpus / "docs.zip").write_bytes(b"PK\x03\x04 not really")
        ws.sync()
        (failure,) = ws.failures()
        assert (failure.object_id, failure.error_class) == ("docs.zip!/", "parse_error")
        assert ws.search("zebra crossing", mode="keyword", k=1)
