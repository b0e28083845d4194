"""Every path of this repository a Markdown file names exists.

A path is a word of an inline code span (fenced blocks hold commands and their output, not references) or
the target of a link, that ends in one of ``EXTENSIONS`` or starts with one of ``ROOTS``; a
``path::test`` names a pytest test of the file, ``path:12`` or ``path:12-20`` lines of it. URLs, absolute
paths (``/sys``, a home), globs and placeholders (``*``, ``{a,b}``, ``<name>``, ``$VAR``) are not paths
of the repository.

It must exist relative to the repository or to the folder of the file naming it, or be the shorthand docs
write after naming the folder: a bare file name found in that folder's tree (``plugin.py`` in the table of
a package), a relative path found at the end of a path of the repository (``koordinator/labels.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXTENSIONS = (".py", ".avsc", ".yaml", ".yml", ".md", ".json")
ROOTS = ("streams/", "node_agent/", "state/", "deploy/", "tests/", "bench/")
SKIPPED = ("tests/fixtures",)
"""Folders whose Markdown is data (copies of other projects' documents), not this repository's docs."""

_FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_PLACEHOLDER = re.compile(r"[*?{}<>$~\[\]]|://|\.\.\.")
_PATH = re.compile(r"[\w.@+-]+(/[\w.@+-]+)*/?")


def _documents() -> list[Path]:
    return sorted(path for path in REPO.rglob("*.md")
                  if not any(part.startswith(".") for part in path.relative_to(REPO).parts)
                  and not path.relative_to(REPO).as_posix().startswith(SKIPPED))


def _words(text: str) -> list[str]:
    """The words of the inline code spans and the link targets of a Markdown text."""
    text = _FENCE.sub("", text)
    words = [word for match in _CODE.finditer(text) for word in match.group(2).split()]
    return words + [target.partition("#")[0] for target in _LINK.findall(_CODE.sub("", text))]


def repository_path(word: str) -> str | None:
    """The repository path ``word`` names, or None when it names none."""
    word = word.rstrip(".,;:)").lstrip("(")
    word = word.partition("::")[0]
    word = re.sub(r":\d+(-\d+)?$", "", word)
    if (not word or word.startswith("/") or _PLACEHOLDER.search(word) or not _PATH.fullmatch(word)
            or word in EXTENSIONS):
        return None
    if word.endswith(EXTENSIONS) or word.startswith(ROOTS):
        return word.removeprefix("./")
    return None


def _tree() -> list[str]:
    """Every file and folder of the repository, as a path relative to it."""
    return [path.relative_to(REPO).as_posix() for path in REPO.rglob("*")
            if not any(part.startswith(".") for part in path.relative_to(REPO).parts)]


def _exists(name: str, document: Path, tree: list[str]) -> bool:
    if (REPO / name).exists() or (document.parent / name).exists():
        return True
    name = name.rstrip("/")
    if "/" in name:
        return any(path.endswith("/" + name) for path in tree)
    folder = document.parent.relative_to(REPO).as_posix()
    under = "" if folder == "." else folder + "/"
    return any(path.startswith(under) and path.rpartition("/")[2] == name for path in tree)


def _missing(document: Path, tree: list[str]) -> list[str]:
    names = {path for word in _words(document.read_text()) if (path := repository_path(word)) is not None}
    return sorted(name for name in names if not _exists(name, document, tree))


@pytest.fixture(scope="module")
def tree() -> list[str]:
    return _tree()


@pytest.mark.parametrize("document", _documents(), ids=lambda path: path.relative_to(REPO).as_posix())
def test_every_path_a_document_names_exists(document, tree):
    assert _missing(document, tree) == []


@pytest.mark.parametrize("word, path", [
    ("streams/routing.py", "streams/routing.py"),
    ("deploy/crds/", "deploy/crds/"),
    ("(streams/bridge/writes.py).", "streams/bridge/writes.py"),
    ("plugins/test_cpuset.py::test_ls_host_applications", "plugins/test_cpuset.py"),
    ("streams/scheduler/domain.py:53-56", "streams/scheduler/domain.py"),
    ("./README.md", "README.md"),
    ("config.py", "config.py"),
    (".avsc", None),
    ("~/.cache/koordstream/model.json", None),
    ("/sys/fs/cgroup/cpu.max", None),
    ("https://koordinator.sh/docs/index.md", None),
    ("tests/streams/**/test_*.py", None),
    ("deploy/{crds,kubernetes}/", None),
    ("KOORD_HOME/bridge/checkpoint.sqlite", None),
    ("kubernetes.io/batch-cpu", None),
    ("streams.nodeaggregate.statecodec", None),
    ("statecodec.dump_state", None),
])
def test_what_counts_as_a_repository_path(word, path):
    assert repository_path(word) == path


def test_words_come_from_inline_code_and_links_not_from_fenced_blocks():
    text = "See `a.py` and [b](docs/b.md#part), `c d.yaml`.\n\n```sh\nkoord up -f e.yaml\n```\n[u](https://x.io/f.md)\n"
    assert _words(text) == ["a.py", "c", "d.yaml", "docs/b.md", "https://x.io/f.md"]


@pytest.mark.parametrize("document, name, found", [
    ("streams/noderesource/README.md", "reconcile.py", True),
    ("streams/noderesource/README.md", "plugins/batchresource.py", True),
    ("streams/noderesource/README.md", "config.py", False),
    ("streams/scheduler/README.md", "defaultpreemption.py", True),
    ("streams/nodeqos/SEEDS.md", "koordinator/labels.py", True),
    ("streams/nodeqos/SEEDS.md", "koordinator/nothing.py", False),
    ("README.md", "streams/routing.py", True),
    ("README.md", "streams/routing/", False),
])
def test_a_path_is_found_from_the_repository_the_document_or_as_shorthand(document, name, found, tree):
    assert _exists(name, REPO / document, tree) is found
