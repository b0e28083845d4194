"""Plugin registries: a name registered twice raises at declaration, build names every unknown or repeated name."""

import pytest

from streams.registries import build, make_registry


class Plugin:
    def __init__(self, weight: int = 1) -> None:
        self.weight = weight


REGISTRY = make_registry([("A", Plugin), ("B", Plugin)], "test plugin")


def test_a_name_registered_twice_raises_naming_what_is_registered():
    with pytest.raises(ValueError, match="test plugin 'A' registered twice"):
        make_registry([("A", Plugin), ("A", Plugin)], "test plugin")


def test_build_keeps_the_order_of_the_names_and_passes_each_its_arguments():
    built = build(REGISTRY, ("B", "A"), "test plugins", {"A": {"weight": 5}})
    assert list(built) == ["B", "A"]
    assert (built["A"].weight, built["B"].weight) == (5, 1)


@pytest.mark.parametrize("names, message", [
    (("A", "C", "D"), r"unknown test plugins: C, D \(have: A, B\)"),
    (("B", "A", "B"), "test plugins listed twice: B"),
], ids=["unknown", "repeated"])
def test_build_refuses_unknown_and_repeated_names(names, message):
    with pytest.raises(KeyError, match=message):
        build(REGISTRY, names, "test plugins")
