"""ClusterColocationProfiles in ``koord apply``: kept in the home, applied to the pods of every later apply.

The embedded default has no API server to call a webhook, so ``koord apply`` does what the webhook does
before it validates anything: each Pod document is onboarded by the profiles in force
(``streams.colocationprofile.mutation``), the same function ``koord webhook`` calls, so a pod applied with
``koord apply`` and one created in a cluster with the same profiles come out the same.

- Profiles are not a streamed kind: they live as their manifests under ``<home>/colocationprofiles/``
  (``ProfileStore``), written when an apply that carries them succeeds, removed by ``koord delete``.
  Profiles in the same apply count for its pods, as a profile created before them in a cluster would.
- A namespace here has only the label the API server gives every namespace,
  ``kubernetes.io/metadata.name: <name>``: there are no Namespace objects in the embedded default, so a
  ``namespaceSelector`` on other labels matches no namespace here.
- PriorityClasses are the four Koordinator installs (koord-prod 9000, koord-mid 7000, koord-batch 5000,
  koord-free 3000; ``preemptionPolicy`` PreemptLowerPriority, the API server's default).
- The probability draw key is ``namespace/name`` (a manifest always names its pod).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path

from streams.colocationprofile.mutation import mutate_pod
from streams.colocationprofile.profile import ColocationProfile, ProfileError, parse_profile
from streams.koordinator.classes import PRIORITY_CLASS_VALUES
from streams.koordinator.colocationprofile import KIND
from streams.objects.documents import Document

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PRIORITY_CLASSES = {name: (value, PREEMPT_LOWER_PRIORITY) for name, value in PRIORITY_CLASS_VALUES.items()}
DEFAULT_NAMESPACE = "default"


@dataclasses.dataclass(frozen=True)
class ProfileStore:
    directory: Path
    """``<home>/colocationprofiles``: one ``<name>.json`` manifest per profile."""

    def manifests(self) -> dict[str, dict]:
        if not self.directory.is_dir():
            return {}
        return {path.stem: json.loads(path.read_text()) for path in sorted(self.directory.glob("*.json"))}

    def save(self, manifest: dict) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{manifest['metadata']['name']}.json"
        temporary = path.with_suffix(".new")
        temporary.write_text(json.dumps(manifest, sort_keys=True))
        temporary.replace(path)

    def delete(self, name: str) -> bool:
        path = self.directory / f"{name}.json"
        if not path.exists():
            return False
        path.unlink()
        return True


def is_profile(document: Document) -> bool:
    return isinstance(document.body, dict) and document.body.get("kind") == KIND


def profile_problems(documents: Iterable[Document]) -> tuple[dict[str, dict], list[str]]:
    """(name -> manifest) of the valid profile documents, and one problem line per bad field of the others."""
    found, problems = {}, []
    for document in documents:
        try:
            profile = parse_profile(document.body)
        except ProfileError as error:
            name = ((document.body.get("metadata") or {}).get("name") or "") if isinstance(
                document.body.get("metadata"), dict) else ""
            problems += [f"{document.location}: document {document.index} ({KIND} {name}): {problem}"
                         for problem in error.problems]
            continue
        found[profile.name] = document.body
    return found, problems


def onboard(documents: list[Document], profiles: Iterable[ColocationProfile]) -> tuple[list[Document], list[str]]:
    """The documents with every Pod onboarded by ``profiles``; a pod a profile cannot onboard is a problem."""
    profiles = list(profiles)
    out, problems = [], []
    for document in documents:
        body = document.body
        if not profiles or not isinstance(body, dict) or body.get("kind") != "Pod" \
                or not isinstance(body.get("metadata"), dict):
            out.append(document)
            continue
        namespace = body["metadata"].get("namespace") or DEFAULT_NAMESPACE
        try:
            mutated, _ = mutate_pod(body, profiles, namespace_labels={NAMESPACE_NAME_LABEL: str(namespace)},
                                    priority_classes=PRIORITY_CLASSES,
                                    draw_key=f"{namespace}/{body['metadata'].get('name')}")
        except ProfileError as error:
            problems.append(f"{document.location}: document {document.index} (Pod {namespace}/"
                            f"{body['metadata'].get('name')}): {error}")
            continue
        out.append(dataclasses.replace(document, body=mutated))
    return out, problems
