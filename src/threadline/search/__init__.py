"""Recall over stored history: `ConversationSearch` gives the model a tool to search it.

    store = SQLiteStore('chat.db')
    agent = Agent(model, capabilities=[StepPersistence(store, scope=tenant), ConversationSearch(store, scope=tenant)])

The capability has no storage of its own: it reads what `StepPersistence` or `store.save` wrote,
through the store's full-text index.

How each store finds text (the query syntax is the same everywhere: words, "phrases", prefix*):

- Words. SQLite: an FTS5 table with the `unicode61` tokenizer (case and accents folded).
  PostgreSQL: a `tsvector` column (the `simple` configuration) with a GIN index. Memory and file
  stores read the text itself.
- Chinese, Japanese, Korean and symbols (emoji). Word tokenizers do not split CJK text into words
  (`환불` inside `환불을`, `返金` inside `返金を`) and drop emoji, and a trigram index cannot
  answer a two-character word. So a message holding such characters also gets a gram text: each
  of those characters as a unigram, each neighbouring pair as a bigram (`storage/_grams.py`).
  One character is found by its unigram; a longer run by its bigrams in a row; every hit is then
  checked against the text. SQLite keeps the grams in a second FTS5 table, PostgreSQL in a narrow
  table with its own GIN index (only messages with such characters have a row).
- Scoped to a conversation (the tool's default), a query costs what that conversation holds,
  whatever the store holds. SQLite fetches the conversation's matches unranked and ranks them
  here by BM25 over the conversation's own statistics (`storage/_local_rank.py`); PostgreSQL
  takes the conversation's rows first, then ranks them with `ts_rank_cd`.
- Store-wide (`reach='scope'`), ranking every match of a frequent term would cost what the store
  holds and say little. SQLite ranks with FTS5's bm25 unless a term is in more than 10,000
  messages; then the scope's newest 200 matches are ranked here. PostgreSQL ranks the newest
  1,000 matches of the scope, and a word in 1 of 100 of the scope's newest messages is ranked
  among its newest 5,000 messages.

`bench/storage.py (d)` times these on 1M stored messages, 15% of them in Korean, Japanese or
Chinese.
"""

from __future__ import annotations

from threadline._public import publish
from threadline.search._conversation_search import ConversationSearch

__all__ = ['ConversationSearch']

publish(__name__, globals(), __all__)  # after every name above exists
