-- postgres, gram_index: an n-gram index for CJK text and symbols (see storage/index/_grams.py). Only
-- messages holding such characters have one. Older messages get theirs on open.
ALTER TABLE messages ADD COLUMN grams tsvector;
CREATE INDEX messages_grams ON messages USING GIN (grams);
