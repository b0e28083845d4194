"""Host file readers: None instead of an exception for anything that is not a small text file."""

import os
import socket
import threading

import pytest

from node_agent import hostfs


@pytest.mark.parametrize("make, expected", [
    (lambda p: p.write_text("42\n"), 42),
    (lambda p: p.write_text("4 2\n"), None),
    (lambda p: p.write_bytes(b"\xff\xfe"), None),
    (lambda p: p.mkdir(), None),
    (lambda p: os.symlink(p, p), None),
    (lambda p: p.write_bytes(b"1" * (hostfs.MAX_FILE_BYTES + 1)), None),
    (lambda p: None, None),
], ids=["integer", "two-numbers", "binary", "directory", "symlink-loop", "oversized", "missing"])
def test_read_int(tmp_path, make, expected):
    path = tmp_path / "value"
    make(path)
    assert hostfs.read_int(path) == expected


@pytest.mark.parametrize("text, expected", [
    ("0-3,8,10-11\n", (0, 1, 2, 3, 8, 10, 11)), ("5", (5,)), ("", ()), ("3-1", None), ("a-b", None),
    ("0-99999999", None), (None, None),
], ids=["ranges", "single", "empty", "reversed", "garbage", "absurd-range", "absent"])
def test_parse_cpu_list(text, expected):
    assert hostfs.parse_cpu_list(text) == expected


def test_key_values_skip_lines_they_do_not_understand():
    assert hostfs.parse_key_values("a 1\nb x\nc\nd 2 3\ne -4\n") == {"a": 1, "e": -4}


def test_list_dirs_of_a_missing_dir_is_empty(tmp_path):
    assert hostfs.list_dirs(tmp_path / "absent") == []


def _socket(path):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    return server


@pytest.mark.parametrize("make", [
    lambda p: os.mkfifo(p),
    lambda p: _socket(p),
    lambda p: os.symlink("/dev/zero", p),
], ids=["fifo-without-writer", "unix-socket", "character-device"])
def test_read_text_refuses_what_is_not_a_regular_file(tmp_path, make):
    """A FIFO with no writer would block ``open()`` for good, ``/dev/zero`` would be read to the size limit:
    each is refused at once. The read runs in a thread so that a regression fails here instead of hanging."""
    path = tmp_path / "cpu.stat"
    keep = make(path)
    found = []
    reader = threading.Thread(target=lambda: found.append(hostfs.read_text(path)), daemon=True)
    reader.start()
    reader.join(10)
    if keep is not None:
        keep.close()
    assert not reader.is_alive(), "read_text blocked on a file that is not a regular file"
    assert found == [None]
