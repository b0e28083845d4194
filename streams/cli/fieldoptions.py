"""Click options derived from a settings dataclass: one flag per field, so adding a setting adds its flag.

A field ``collect_interval_s`` becomes ``--collect-interval`` (underscores to dashes, a trailing ``_s``
for seconds dropped) unless its metadata names the flag (``{"flag": "dry-run"}``). The option's type
comes from the field's annotation, its default from the field's default, and its help from the field's
docstring. A ``bool`` field defaulting to True is ``--x/--no-x``, one defaulting to False a plain flag;
a ``tuple[float, ...]`` field is an option given once per value; metadata ``{"choices": (...)}``
restricts the values and ``{"path": "file" | "directory"}`` what a ``Path`` may name. The command
receives every value under its field's name.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import types
import typing
from pathlib import Path
from typing import Any, Callable, TypeVar

import click

Command = TypeVar("Command", bound=Callable[..., Any])

PATH_KINDS = {None: {}, "file": {"dir_okay": False}, "directory": {"file_okay": False}}


def field_docs(cls: type) -> dict[str, str]:
    """Field name -> its docstring (the string literal right below it in the class body), one paragraph."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for node, following in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant) and isinstance(following.value.value, str)):
            docs[node.target.id] = " ".join(following.value.value.replace("``", "").split())
    return docs


def flag_name(field: dataclasses.Field) -> str:
    """The option's name, without the leading dashes."""
    return field.metadata.get("flag") or field.name.removesuffix("_s").replace("_", "-")


def field_option(field: dataclasses.Field, annotation: Any, help_text: str) -> Callable[[Command], Command]:
    """The click option of one dataclass field."""
    name, default = flag_name(field), field.default
    kind = _without_none(annotation)
    settings: dict[str, Any] = {"default": default, "help": help_text,
                                "show_default": not (default is None or default is False or default == "")}
    declarations = [f"--{name}"]
    if kind is bool:
        if default:
            declarations = [f"--{name}/--no-{name}"]
        else:
            settings["is_flag"] = True
    elif "choices" in field.metadata:
        settings["type"] = click.Choice(field.metadata["choices"])
    elif kind is Path:
        settings["type"] = click.Path(path_type=Path, **PATH_KINDS[field.metadata.get("path")])
    elif typing.get_origin(kind) is tuple:
        settings["type"], settings["multiple"] = typing.get_args(kind)[0], True
    else:
        settings["type"] = kind
    return click.option(*declarations, field.name, **settings)


def settings_options(cls: type) -> Callable[[Command], Command]:
    """A decorator adding the options of every field of the dataclass ``cls``, in field order."""
    hints, docs = typing.get_type_hints(cls), field_docs(cls)
    options = [field_option(field, hints[field.name], docs.get(field.name, "")) for field in dataclasses.fields(cls)]

    def decorate(command: Command) -> Command:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def _without_none(annotation: Any) -> Any:
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        (kind,) = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return kind
    return annotation
