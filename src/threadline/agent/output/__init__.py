"""A run's output: the output types (`ToolOutput`, `NativeOutput`, `PromptedOutput`,
`TextOutput`), how a response becomes the final result, and deferred tool requests and results.
Public names are exported from `threadline.agent`."""

from __future__ import annotations

__all__: list[str] = []
