"""The one error type of manifest ingest, and the field-level problem it is built from.

``koord apply`` shows a ManifestError to the user as is, so each line must say
where (file, line, document, object) and what (field path, reason) on its own.
"""

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    """One problem with one field: ``spec.containers[0].resources.requests.cpu`` and why."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}" if self.path else self.reason


class ManifestError(ValueError):
    """Input that cannot be applied; ``problems`` holds one self-contained line per problem."""

    def __init__(self, problems: str | Sequence[str]):
        self.problems = (problems,) if isinstance(problems, str) else tuple(problems)
        super().__init__("\n".join(self.problems))
