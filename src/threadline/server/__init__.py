"""The chat server (`threadline serve`, extra `server`): see `create_app` for its rules."""

from threadline.server._app import DEV_SCOPE, TurnAgent, create_app

__all__ = ['DEV_SCOPE', 'TurnAgent', 'create_app']
