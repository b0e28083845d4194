"""Test support: the YAML examples embedded in the seed articles (``../shared/seeds/*.txt``).

The seeds are plain-text renders of web articles and embed YAML two ways:

- Markdown sources (002, 004) fence it: the lines between a ```` ```yaml ````
  line and the next ```` ``` ```` line;
- HTML renders (000, 001, 003) leave it bare: a block starts at a column-0
  ``apiVersion:`` or ``kind:`` line (or a ``---`` line just before one) and
  runs to the next blank line or rendered list item (``  1. ...``, ``  • ...``),
  which the renderer glues onto the example that precedes it.

A bare block with no indented line at all is not YAML any more: the renderer
flattened it, dropping nesting and many lines (000 is the English render of
002, whose fenced examples are the complete originals). Such blocks come back
with ``flattened=True`` so a test can count them without loading them.
"""

import re
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
SEEDS_DIR = REPO_ROOT.parent / "shared" / "seeds"

_FENCE_OPEN = re.compile(r"^```ya?ml\s*$")
_FENCE_CLOSE = re.compile(r"^```\s*$")
_BARE_START = re.compile(r"^(apiVersion|kind):\s")
_RENDERED_LIST_ITEM = re.compile(r"^\s+(\d+\.|\u2022)\s")


@dataclass(frozen=True)
class SeedBlock:
    """One YAML example: its seed file, 1-based number within that file, first line and text."""

    seed: str
    number: int
    line: int
    text: str
    flattened: bool = False

    @property
    def id(self) -> str:
        return f"{self.seed}#{self.number}"


def seed_files() -> list[Path]:
    return sorted(SEEDS_DIR.glob("*.txt"))


def extract_blocks(path: Path) -> list[SeedBlock]:
    """Every YAML example of one seed file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    spans = _fenced(lines) or _bare(lines)
    stem = path.stem.split("_")[0]
    return [
        SeedBlock(
            stem, number, start + 1, "\n".join(lines[start:end]) + "\n", flattened=_is_flattened(lines[start:end])
        )
        for number, (start, end) in enumerate(spans, start=1)
    ]


def _fenced(lines: list[str]) -> list[tuple[int, int]]:
    spans, start = [], None
    for index, line in enumerate(lines):
        if start is None and _FENCE_OPEN.match(line):
            start = index + 1
        elif start is not None and _FENCE_CLOSE.match(line):
            spans.append((start, index))
            start = None
    return spans


def _bare(lines: list[str]) -> list[tuple[int, int]]:
    spans, index = [], 0
    while index < len(lines):
        starts_here = _BARE_START.match(lines[index])
        separator = lines[index] == "---" and index + 1 < len(lines) and _BARE_START.match(lines[index + 1])
        if not (starts_here or separator):
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].strip() and not _RENDERED_LIST_ITEM.match(lines[end]):
            end += 1
        spans.append((index, end))
        index = end
    return spans


def _is_flattened(block: list[str]) -> bool:
    return not any(line.startswith((" ", "\t")) for line in block if line.strip())
