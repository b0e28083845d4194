"""YAML read the way kubectl reads it, with the position of every document.

Two differences from PyYAML's SafeLoader, both to match kubectl (whose YAML
goes through ``sigs.k8s.io/yaml`` to JSON):

- timestamps stay strings (``updateTime: 2024-05-01T10:00:00Z`` is text in
  JSON, and a datetime would not survive into the manifest);
- a key repeated in one mapping is an error, not a silent overwrite.
"""

from collections.abc import Hashable, Iterator

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, SequenceNode

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"


class KubeLoader(yaml.SafeLoader):
    """SafeLoader without timestamp resolution and with duplicate-key detection."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict:
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue
            if key in seen:
                raise ConstructorError(
                    "while constructing a mapping", node.start_mark, f'duplicate key "{key}"', key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_all_with_nodes(text: str) -> Iterator[tuple[Node, object]]:
    """Each document of a YAML stream as (root node, parsed value); raises yaml.YAMLError."""
    loader = KubeLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            yield node, loader.construct_document(node)
    finally:
        loader.dispose()


def item_lines(node: Node, key: str = "items") -> list[int]:
    """1-based start lines of the elements of the sequence under ``key`` in a mapping node."""
    if not isinstance(node, MappingNode):
        return []
    for key_node, value_node in node.value:
        if key_node.value == key and isinstance(value_node, SequenceNode):
            return [element.start_mark.line + 1 for element in value_node.value]
    return []
