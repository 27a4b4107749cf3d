"""Warning when a model ignores a setting a request relies on (`UnsupportedSettingWarning`).

Rules, as pydantic-ai 2.62 has them:
- Only the guarantee settings warn: `timeout`, `max_retries`, `stop_sequences`,
  `parallel_tool_calls`, `extra_headers` and `extra_body`. The tuning knobs a model ignores
  (`temperature`, `seed`, ...) do not, so one set of settings works across models.
- `parallel_tool_calls` is a guarantee only when it is `False` and the request offers function
  tools (`True` asks for nothing a model could break).
- A model says what it ignores in its class's `unsupported_settings`; the default is nothing, so a
  local model (`TestModel`, `FunctionModel`) never warns.
- A model warns each time it is about to send a request, so every member a `FallbackModel` tries
  warns for itself, and a setting from the run, the agent, the model or a capability all count.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping

from threadline.exceptions import UnsupportedSettingWarning

__all__ = ['GUARANTEE_SETTINGS', 'warn_unsupported_settings']

GUARANTEE_SETTINGS: dict[str, str] = {
    'timeout': ' Use `request_timeout` instead, which Threadline enforces for every model.',
    'max_retries': '',
    'stop_sequences': '',
    'parallel_tool_calls': '',
    'extra_headers': '',
    'extra_body': '',
}
"""The settings whose absence changes what a request guarantees, with a hint for the warning."""


def warn_unsupported_settings(
    model_id: str, settings: Mapping[str, object] | None, unsupported: Iterable[str], *, has_function_tools: bool
) -> None:
    """Warn once for each guarantee setting in `settings` that the model `model_id` ignores."""
    if not settings:
        return
    ignored = frozenset(unsupported)
    for name, hint in GUARANTEE_SETTINGS.items():
        if name not in settings or name not in ignored:
            continue
        if name == 'parallel_tool_calls' and (settings[name] is not False or not has_function_tools):
            continue
        warnings.warn(
            f'The `{name}` setting is not supported by model {model_id!r} and will be ignored.{hint}',
            UnsupportedSettingWarning,
            stacklevel=4,
        )
