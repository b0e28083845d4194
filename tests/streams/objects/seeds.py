"""Test support: the YAML examples of Koordinator's release articles, as fixtures (``tests/fixtures/seeds``).

One file per example, named ``<article>-<number>``: ``.yaml`` for an example
as the article gives it, ``.txt`` for one the article's HTML render
flattened (indentation and many lines dropped: not YAML any more). Each file
starts with a comment header naming its article file, section and lines,
then a blank line, then the example unchanged.
"""

import re
from dataclasses import dataclass
from pathlib import Path

SEEDS_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "seeds"
_ARTICLE_LINE = re.compile(r"article lines (\d+)-")


@dataclass(frozen=True)
class SeedBlock:
    """One YAML example: its article, 1-based number within that article, first line there and text."""

    seed: str
    number: int
    line: int
    text: str
    flattened: bool = False

    @property
    def id(self) -> str:
        return f"{self.seed}#{self.number}"


def seed_files() -> list[Path]:
    return sorted(SEEDS_DIR.glob("*-*.*"))


def load_block(path: Path) -> SeedBlock:
    header, text = path.read_text(encoding="utf-8").split("\n\n", 1)
    seed, number = path.stem.split("-")
    return SeedBlock(seed, int(number), int(_ARTICLE_LINE.search(header).group(1)), text,
                     flattened=_is_flattened(text.splitlines()))


def seed_block(seed: str, number: int) -> SeedBlock:
    """The example ``number`` of article ``seed`` (e.g. ``"002", 5``)."""
    [path] = SEEDS_DIR.glob(f"{seed}-{number:02d}.*")
    return load_block(path)


def _is_flattened(block: list[str]) -> bool:
    return not any(line.startswith((" ", "\t")) for line in block if line.strip())
