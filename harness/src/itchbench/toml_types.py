"""The TOML files a user writes (a contract, a scenario, a store's thresholds) read with one error for bytes
that are not UTF-8 or not TOML, and TOML's names for the Python types tomllib reads it into: what such a file's
error says a key expected and got, in the words of the file the user wrote (an integer, not <class 'int'>)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from .utf8 import not_utf8

_NAMES = {bool: "a boolean (true or false)", int: "an integer", float: "a float", str: "a string", list: "an array",
          dict: "a table"}


def read(path: Path, error: type[Exception]) -> tuple[str, dict[str, Any]]:
    """A TOML file's text and its tables; error naming the path when it is not UTF-8 text (as TOML must be) or not
    TOML."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise error(not_utf8(path, e, "TOML")) from e
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise error(f"{path}: not valid TOML: {e}") from e


def expected(typ: type | tuple[type, ...]) -> str:
    """"an integer", "an integer or a string": the type (or types) a key takes."""
    types = typ if isinstance(typ, tuple) else (typ,)
    return " or ".join(_NAMES.get(t, t.__name__) for t in types)


def got(value: Any) -> str:
    """A value as TOML says what it is: "a float (5.0)"."""
    return f"{_NAMES.get(type(value), type(value).__name__)} ({value!r})"


def only_beside(key: str, needs: str, value: str, have: Any) -> str:
    """Why a key given in a file changes nothing: it takes effect only where another key (`needs`) has `value`,
    and here it has `have`. Said after the key's own name."""
    return f'takes effect only with {needs} = "{value}" (here "{have}"): set that, or leave {key} out'
