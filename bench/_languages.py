"""Multilingual text for the search benchmarks: some conversations of the shared workload in
Korean, Japanese or Chinese, and emoji in some prompts, so that CJK and symbol queries meet a
store of realistic size and frequency (the shared workload writes Latin pseudo-words only).

`localize(history, k)` rewrites conversation `k`'s prompts and text answers in place:
- `k % 20 == 0`: Korean, words separated by spaces with particles attached (`환불을`);
- `k % 20 == 7`: Japanese and `k % 20 == 14`: Chinese, with no spaces between words;
- in every conversation, 1 prompt in 25 ends with an emoji (`😀` the most common).
Words follow a Zipf law, as the workload's do: the first few real words (`환불`, `返金`, `退款`)
are the frequent ones, the synthetic words after them are rarer by rank.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

__all__ = ['EMOJI', 'LANGUAGES', 'language_of', 'localize']

_HANGUL = [chr(c) for c in range(0xAC00, 0xD7A4, 37)]
_KANA = [chr(c) for c in range(0x30A2, 0x30F3)]
_HAN = [chr(c) for c in range(0x4E00, 0x9FA5, 53)]


def _synthetic(alphabet: list[str], count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words: set[str] = set()
    while len(words) < count:
        words.add(''.join(rng.choice(alphabet) for _ in range(rng.choice((2, 2, 3)))))
    return sorted(words)


LANGUAGES: dict[str, dict[str, Any]] = {
    'ko': {
        'words': [
            '환불',
            '주문',
            '배송',
            '결제',
            '요청',
            '취소',
            '상품',
            '고객',
            '문의',
            '확인',
            *_synthetic(_HANGUL, 3000, 1),
        ],
        'glue': ['을', '를', '이', '가', '은', '는', '에', '에서', '으로', '', '', ''],
        'space': ' ',
    },
    'ja': {
        'words': [
            '返金',
            '注文',
            '配送',
            '支払い',
            '確認',
            'キャンセル',
            '商品',
            'お客様',
            *_synthetic(_KANA + _HAN, 3000, 2),
        ],
        'glue': ['を', 'は', 'が', 'の', 'に', 'で', '', ''],
        'space': '',
    },
    'zh': {
        'words': ['退款', '订单', '配送', '付款', '确认', '取消', '商品', '客户', *_synthetic(_HAN, 3000, 3)],
        'glue': ['', '', '的', '了'],
        'space': '',
    },
}
EMOJI = ['😀', '🙏', '📦', '💳', '🚚', '🦀']

for _spec in LANGUAGES.values():
    _spec['cum'] = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(_spec['words']))))


def language_of(k: int) -> str | None:
    return {0: 'ko', 7: 'ja', 14: 'zh'}.get(k % 20)


def _sentence(rng: random.Random, language: str, chars: int) -> str:
    spec = LANGUAGES[language]
    out: list[str] = []
    n = 0
    while n < chars:
        word = rng.choices(spec['words'], cum_weights=spec['cum'], k=1)[0] + rng.choice(spec['glue'])
        out.append(word)
        n += len(word) + len(spec['space'])
    return spec['space'].join(out)


def localize(history: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """`history` (the workload's JSON form) with conversation `k`'s text rewritten as above."""
    language = language_of(k)
    rng = random.Random(k * 7919)
    prompts = 0
    for message in history:
        for part in message['parts']:
            kind = part.get('part_kind')
            if kind not in ('user-prompt', 'text') or not isinstance(part.get('content'), str):
                continue
            if language:
                # CJK text carries about three Latin letters per character
                part['content'] = _sentence(rng, language, max(4, len(part['content']) // 3))
            if kind == 'user-prompt':
                prompts += 1
                if prompts % 25 == 0:
                    emoji = rng.choices(EMOJI, cum_weights=list(itertools.accumulate((20, 5, 3, 2, 1, 0.2))))[0]
                    part['content'] += ' ' + emoji
    return history
