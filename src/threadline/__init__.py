"""Threadline: the conversation history of LLM agents, run, kept valid, stored and audited."""

from __future__ import annotations

from .exceptions import MessageValidationError, ThreadlineError, UserError
from .messages import ModelMessage, ModelMessagesTypeAdapter, to_json, to_jsonable_python

__all__ = [
    'MessageValidationError',
    'ModelMessage',
    'ModelMessagesTypeAdapter',
    'ThreadlineError',
    'UserError',
    'to_json',
    'to_jsonable_python',
]
