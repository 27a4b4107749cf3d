"""The JSON shapes the conversation endpoints return (camelCase, as the page and clients read them)."""

from __future__ import annotations

from collections.abc import Callable

from threadline.storage import ConversationSummary, SearchHit

__all__ = ['hit_json', 'summary_json']


def hit_json(hit: SearchHit, chat_id: str) -> dict[str, object]:
    return {'conversationId': chat_id, 'position': hit.position, 'snippet': hit.snippet, 'role': hit.role}


def summary_json(row: ConversationSummary, chat: Callable[[str], str]) -> dict[str, object]:
    return {
        'id': chat(row.conversation_id),
        'title': row.title,
        'messages': row.message_count,
        'updatedAt': row.updated_at.isoformat(),
        'forkedFrom': None if row.forked_from is None else chat(row.forked_from),
    }
