"""TOML's names for the Python types tomllib reads it into: what a contract or scenario file's error says a
key expected and got, in the words of the file the user wrote (an integer, not <class 'int'>)."""

from __future__ import annotations

from typing import Any

_NAMES = {bool: "a boolean (true or false)", int: "an integer", float: "a float", str: "a string", list: "an array",
          dict: "a table"}


def expected(typ: type | tuple[type, ...]) -> str:
    """"an integer", "an integer or a string": the type (or types) a key takes."""
    types = typ if isinstance(typ, tuple) else (typ,)
    return " or ".join(_NAMES.get(t, t.__name__) for t in types)


def got(value: Any) -> str:
    """A value as TOML says what it is: "a float (5.0)"."""
    return f"{_NAMES.get(type(value), type(value).__name__)} ({value!r})"
