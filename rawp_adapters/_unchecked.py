"""Models built from values that are already of their fields' types, without pydantic
checking them again: the hot paths (an agent's text deltas, every frame a session
numbers) build millions of them."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
# pydantic's slots of every model, set through their descriptors: faster than
# object.__setattr__, which looks each one up by name.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def construct_unchecked(model: type[M], fields: dict[str, Any], fields_set: set[str]) -> M:
    """``model(**fields)`` as pydantic builds it, without validating ``fields``.

    The caller vouches for them: ``fields`` holds every field of ``model`` (defaults
    too, in the model's order), each already of its field's type and frozen where the
    model is; it becomes the model's ``__dict__``. ``fields_set`` names the fields
    given explicitly (what ``model_fields_set`` reports); it is copied. A wrong value
    is not caught here: it surfaces when the model is serialized, or never. Use it
    only where a profile shows validation to matter, and test it against ``model``.
    """
    built = _new(model)
    _set_dict(built, fields)
    _set_fields_set(built, fields_set.copy())
    _set_extra(built, None)
    _set_private(built, None)
    return built
