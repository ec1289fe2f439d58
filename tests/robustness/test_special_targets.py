"""Writes never replace what is not a regular file: pipes and devices are written through,
a folder is refused."""
from __future__ import annotations

import os
import threading

import pytest

from replayci.core.files import write_atomic


def test_a_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, encoding="utf-8").read()))
    reader.start()
    write_atomic(str(fifo), '{"ok": true}\n')
    reader.join(5)
    assert got == ['{"ok": true}\n']
    assert fifo.is_fifo()


@pytest.mark.parametrize("data", ["text\n", b"bytes\n"])
def test_a_device_and_a_link_to_it_stay_what_they_are(tmp_path, data):
    link = tmp_path / "out.json"
    link.symlink_to("/dev/null")
    write_atomic(str(link), data)
    write_atomic("/dev/null", data)
    assert link.is_symlink() and os.path.realpath(link) == "/dev/null"
    assert not os.path.isfile("/dev/null")


@pytest.mark.parametrize("name", ["reports/", "existing"])
def test_a_folder_is_refused_clearly(tmp_path, name):
    (tmp_path / "existing").mkdir()
    with pytest.raises(IsADirectoryError, match="is a folder"):
        write_atomic(f"{tmp_path}/{name}", "x")
    assert not (tmp_path / "reports").exists()
