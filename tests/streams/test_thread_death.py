"""A worker thread that dies is logged as one ERROR record with its traceback (``streams.app.log_thread_death``)."""

from __future__ import annotations

import logging
import threading

from streams.app import log_thread_death


def _run(target, monkeypatch) -> None:
    monkeypatch.setattr(threading, "excepthook", log_thread_death)
    thread = threading.Thread(target=target, name="consumer-thread")
    thread.start()
    thread.join()


def test_a_thread_ended_by_an_exception_is_one_error_with_its_traceback(monkeypatch, caplog):
    def fail():
        raise ValueError("fetcher closed")

    with caplog.at_level(logging.ERROR, logger="streams.app"):
        _run(fail, monkeypatch)
    [record] = caplog.records
    assert record.levelno == logging.ERROR and record.getMessage() == "thread consumer-thread died"
    assert record.exc_info[0] is ValueError and "fetcher closed" in caplog.text and "Traceback" in caplog.text


def test_a_thread_ended_by_system_exit_is_not_logged(monkeypatch, caplog):
    def leave():
        raise SystemExit(0)

    with caplog.at_level(logging.DEBUG, logger="streams.app"):
        _run(leave, monkeypatch)
    assert not caplog.records
