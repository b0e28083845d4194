"""Reading ``koord apply -f FILE|DIR|-`` input into documents, each with where it came from.

Input is what kubectl accepts: a file, a directory (its ``*.yaml``, ``*.yml``
and ``*.json`` files in name order, not recursive) or ``-`` for standard input.
A text whose first non-blank character is ``{`` is a JSON stream (one or more
objects), anything else a YAML stream of ``---``-separated documents, as
kubectl's YAMLOrJSONDecoder decides. A ``kind: List`` (or any ``*List``) with
``items`` stands for its items. Empty documents are skipped.

Syntax errors name the file and line; every unreadable file of a directory is
reported in one ManifestError, so one run shows all of them.
"""

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from streams.objects.errors import ManifestError
from streams.objects.kubeyaml import item_lines, load_all_with_nodes

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_LABEL = "<stdin>"
_WHITESPACE = re.compile(r"\s*")


@dataclass(frozen=True)
class Document:
    """One object of the input: its file, position and parsed body (a dict for any valid manifest)."""

    file: str
    index: int
    """0-based position among all documents of the input, across files."""
    line: int
    """1-based line in ``file`` where the document's content starts."""
    body: Any

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"


def load_documents(source: str | os.PathLike, *, stdin_text: str | None = None) -> list[Document]:
    """Every document of a file, a directory or ``-`` (``stdin_text``, or standard input when None)."""
    if str(source) == STDIN:
        sources: list[tuple[str, Path | None]] = [(STDIN_LABEL, None)]
    else:
        sources = [(str(path), path) for path in _manifest_files(Path(source))]
    documents: list[Document] = []
    problems: list[str] = []
    for label, path in sources:
        try:
            text = _read(path) if path else sys.stdin.read() if stdin_text is None else stdin_text
            for line, body in _parse(label, text):
                documents.append(Document(label, len(documents), line, body))
        except ManifestError as err:
            problems.extend(err.problems)
    if problems:
        raise ManifestError(problems)
    return documents


def _manifest_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in MANIFEST_SUFFIXES and p.is_file())
    if not path.exists():
        raise ManifestError(f"{path}: no such file or directory")
    return [path]


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise ManifestError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise ManifestError(f"{path}: cannot read: {err.strerror}") from None


def _parse(label: str, text: str) -> list[tuple[int, Any]]:
    """(line, body) of each non-empty document, Lists expanded. Both parsers recurse once or more per
    level of nesting, so a document nested deeper than Python's recursion limit is refused, as is an
    integer longer than Python converts (``sys.get_int_max_str_digits``)."""
    try:
        if text.lstrip().startswith("{"):
            return _parse_json(label, text)
        return _parse_yaml(label, text)
    except RecursionError:
        raise ManifestError(f"{label}: nested too deeply to read (lists and objects inside each other)") from None
    except ValueError as err:
        if "integer string conversion" not in str(err):
            raise
        raise ManifestError(f"{label}: a number has more than {sys.get_int_max_str_digits():,} digits") from None


def _parse_yaml(label: str, text: str) -> list[tuple[int, Any]]:
    result = []
    try:
        for node, body in load_all_with_nodes(text):
            if body is None:
                continue
            if _is_list(body):
                result.extend(zip(item_lines(node), body["items"]))
            else:
                result.append((node.start_mark.line + 1, body))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{label}:{mark.line + 1}" if mark else label
        detail = err.problem or err.context
        raise ManifestError(f"{where}: YAML syntax error: {detail}") from None
    except yaml.YAMLError as err:
        raise ManifestError(f"{label}: YAML error: {err}") from None
    return result


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    result = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _parse_json(label: str, text: str) -> list[tuple[int, Any]]:
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)
    result = []
    pos = _WHITESPACE.match(text).end()
    while pos < len(text):
        line = text.count("\n", 0, pos) + 1
        try:
            body, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise ManifestError(f"{label}:{err.lineno}: JSON syntax error: {err.msg} (column {err.colno})") from None
        except _DuplicateKey as err:
            raise ManifestError(f'{label}:{line}: duplicate key "{err}" in the object starting here') from None
        if _is_list(body):
            lines = [text.count("\n", 0, offset) + 1 for offset in _json_item_offsets(decoder, text, pos)]
            result.extend(zip(lines, body["items"]))
        else:
            result.append((line, body))
        pos = _WHITESPACE.match(text, end).end()
    return result


def _json_item_offsets(decoder: json.JSONDecoder, text: str, start: int) -> list[int]:
    """Offsets of the elements of the top-level "items" array of the (valid) JSON object at ``start``."""
    pos = _WHITESPACE.match(text, start + 1).end()
    while text[pos] != "}":
        key, pos = decoder.scan_once(text, pos)
        pos = _WHITESPACE.match(text, _WHITESPACE.match(text, pos).end() + 1).end()
        if key == "items":
            offsets = []
            pos = _WHITESPACE.match(text, pos + 1).end()
            while text[pos] != "]":
                offsets.append(pos)
                pos = _skip_comma(text, decoder.scan_once(text, pos)[1])
            return offsets
        pos = _skip_comma(text, decoder.scan_once(text, pos)[1])
    return []


def _skip_comma(text: str, pos: int) -> int:
    pos = _WHITESPACE.match(text, pos).end()
    if text[pos] == ",":
        pos = _WHITESPACE.match(text, pos + 1).end()
    return pos


def _is_list(body: Any) -> bool:
    kind = body.get("kind") if isinstance(body, dict) else None
    return isinstance(kind, str) and kind.endswith("List") and isinstance(body.get("items"), list)
