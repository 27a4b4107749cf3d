-- sqlite, gram_index: an n-gram index for CJK text and symbols (see storage/index/_grams.py). Only
-- messages holding such characters have a row. Rows of older messages are added on open.
CREATE VIRTUAL TABLE message_grams USING fts5(grams, ctok, stok, tokenize='unicode61')
