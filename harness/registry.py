"""Name -> implementation registries, so every stage is chosen by name from a TOML file."""
from __future__ import annotations

from typing import Any, Callable


class UnknownStageError(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0])


class Registry:
    """A small registry of factories for one kind of stage (chunker, tokenizer, fusion, ...)."""

    def __init__(self, kind: str):
        self.kind = kind
        self._factories: dict[str, Callable[..., Any]] = {}

    def register(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
            if name in self._factories:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._factories[name] = factory
            return factory

        return decorate

    def create(self, name: str, **params: Any) -> Any:
        try:
            factory = self._factories[name]
        except KeyError:
            raise UnknownStageError(
                f"unknown {self.kind} {name!r}; available: {', '.join(sorted(self._factories))}"
            ) from None
        try:
            return factory(**params)
        except TypeError as exc:  # unknown or missing parameter in the TOML table
            raise TypeError(f"{self.kind} {name!r}: {exc}") from None

    def factory(self, name: str) -> Callable[..., Any]:
        """The registered factory itself (e.g. to read its parameters with inspect.signature)."""
        try:
            return self._factories[name]
        except KeyError:
            raise UnknownStageError(f"unknown {self.kind} {name!r}; available: {', '.join(self.names())}") from None

    def names(self) -> list[str]:
        return sorted(self._factories)

    def __contains__(self, name: str) -> bool:
        return name in self._factories
