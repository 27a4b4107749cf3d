"""The SQL of a PostgreSQL search (for `PostgresDialect.search`): which rows are ranked, and how.

Word terms match `messages.tsv`, gram terms (CJK, symbols; see `_grams`) `message_grams.grams`.

- Scoped to conversations, their rows are taken first (a materialized CTE, so the planner cannot
  start from a GIN index whose posting list for a frequent word grows with the store): the query
  costs what the conversations hold. `ts_rank_cd` reads only the row it ranks, so no other
  conversation's words shape a score.
- Store-wide, the GIN index finds the matches (a materialized CTE carrying ids and scopes only),
  the scope filters them, and the newest `RANK_CAP` are ranked: ranking reads each match's
  vector, which costs what the store holds beyond that. A gram-only query reads the narrow gram
  rows alone until the best few are known. Its index test joins a run's bigrams with `&`, not
  `<->`: GIN answers `&` itself, while a phrase is rechecked against every candidate's vector
  (41 ms against 5 ms for a three-character Japanese word in 1M messages). Ranking uses the
  phrase, and a candidate without it scores 0 and is dropped; the text itself is checked last.
- Vectors are read by primary key, one row at a time (a correlated subquery), so no plan, with or
  without statistics, joins a whole table to reach the rows it needs.
- The message text (often toasted) is read for the best rows only, and the snippet (`ts_headline`
  costs far more than `ts_rank_cd`) made for them alone.
"""

from __future__ import annotations

from typing import Any

from threadline.storage.index._grams import gram_phrases
from threadline.storage.index._query import Term

__all__ = ['RANK_CAP', 'best_rows', 'ranked_source', 'tsquery']

RANK_CAP = 1_000
"""A store-wide query is ranked among at most the newest 1,000 matches of its scope."""

_QUERY = "to_tsquery('simple', %s)"
_OWNER = {'tsv': 'messages', 'grams': 'message_grams'}


def tsquery(terms: list[Term]) -> str:
    """The terms as a `to_tsquery` expression: words and prefixes (`'refun':*`) joined by `&`, a
    phrase's words by `<->`. Each word is quoted (a term holds only word characters; see `_query`)."""
    parts = []
    for term in terms:
        if term.kind == 'phrase':
            parts.append('(' + ' <-> '.join(_quoted(w) for w in term.words) + ')')
        else:
            parts.append(_quoted(term.text) + (':*' if term.kind == 'prefix' else ''))
    return ' & '.join(parts)


def gram_tsquery(terms: list[Term], *, phrase: bool = True) -> str:
    """Gram terms as a `to_tsquery` expression on the gram text: each run's tokens in a row
    (`phrase`), or merely all present."""
    joint = ' <-> ' if phrase else ' & '
    runs = [tokens for term in terms for word in term.words for tokens in gram_phrases(word)]
    return ' & '.join('(' + joint.join(_quoted(t) for t in tokens) + ')' for tokens in runs)


def _quoted(word: str) -> str:
    return "'" + word.replace("'", "''") + "'"


def _vector(column: str, row: str) -> str:
    return f'(SELECT x.{column} FROM {_OWNER[column]} x WHERE x.id = {row}.id)'


def ranked_source(
    words: list[Term], grams: list[Term], scope: str | None, conversations: list[str] | None
) -> tuple[str, list[Any]]:
    """A query of (id, score) rows: the candidates and their scores (see the module docstring)."""
    ranks = [(c, t) for c, t in (('tsv', words and tsquery(words)), ('grams', grams and gram_tsquery(grams))) if t]
    texts = [text for _, text in ranks]
    if conversations:
        carried = ', '.join('m.tsv' if c == 'tsv' else f'{_vector(c, "m")} AS {c}' for c, _ in ranks)
        where = ' AND '.join(f'found.{c} @@ {_QUERY}' for c, _ in ranks)
        score = ' + '.join(f'ts_rank_cd(found.{c}, {_QUERY})' for c, _ in ranks)
        sql = (
            f'WITH found AS MATERIALIZED (SELECT m.id, {carried} FROM messages m '
            f'WHERE m.conversation_id = ANY(%s)) SELECT found.id, {score} AS score FROM found WHERE {where}'
        )
        return sql, [conversations, *texts, *texts]
    tests = [
        (c, t)
        for c, t in (('tsv', words and tsquery(words)), ('grams', grams and gram_tsquery(grams, phrase=False)))
        if t
    ]
    key, tables = ('m', 'messages m') if words else ('g', 'message_grams g')
    if words and grams:
        tables += ' JOIN message_grams g ON g.id = m.id'
    where = ' AND '.join(f'{"m" if c == "tsv" else "g"}.{c} @@ {_QUERY}' for c, _ in tests)
    score = ' + '.join(f'ts_rank_cd({_vector(c, "found")}, {_QUERY})' for c, _ in ranks)
    in_scope = 'WHERE scope = %s ' if scope is not None else ''
    sql = (
        f'WITH matched AS MATERIALIZED (SELECT {key}.id, {key}.scope FROM {tables} WHERE {where}), '
        f'found AS (SELECT id FROM matched {in_scope}ORDER BY id DESC LIMIT %s) '
        f'SELECT found.id, {score} AS score FROM found'
    )
    return sql, [*(t for _, t in tests), *([scope] if scope is not None else []), RANK_CAP, *texts]


def best_rows(
    source: str, params: list[Any], words: list[Term], grams: list[Term], limit: int
) -> tuple[str, list[Any]]:
    """The best rows of `source` as (id, branch id, position, run id, score, snippet or text):
    with gram terms, `limit * 5` rows and their text, for the caller to check and cut."""
    kept = ' WHERE ranked.score > 0' if grams else ''  # a candidate without its phrase scores 0
    best = f'SELECT * FROM ({source}) ranked{kept} ORDER BY ranked.score DESC, ranked.id LIMIT %s'
    joined = f'FROM ({best}) best JOIN messages t ON t.id = best.id'
    columns = 'best.id, t.branch_id, t.position, t.run_id, best.score'
    order = ' ORDER BY best.score DESC, best.id'
    if grams:  # ts_headline cannot see a gram inside a word: the caller makes the snippet
        return f'SELECT {columns}, t.search_text {joined}{order}', [*params, limit * 5]
    headline = f"ts_headline('simple', t.search_text, {_QUERY}, 'StartSel=[, StopSel=], MaxWords=14, MinWords=4')"
    return f'SELECT {columns}, {headline} {joined}{order}', [tsquery(words), *params, limit]
