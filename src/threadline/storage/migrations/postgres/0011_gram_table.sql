-- postgres migration 11: the gram index in a narrow table of its own, as SQLite keeps it. Only
-- messages holding CJK characters or symbols have grams, and their gram vectors are large (about
-- 2 kB, stored out of line): on the message rows, a store-wide CJK query read one wide row per
-- match to find the newest ones (20,000 rows for a frequent word in 1M messages); here about 150
-- matches share a page.
CREATE TABLE message_grams (
    id BIGINT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    scope TEXT,
    grams tsvector NOT NULL
);
INSERT INTO message_grams (id, scope, grams) SELECT id, scope, grams FROM messages WHERE grams IS NOT NULL;
CREATE INDEX message_grams_grams ON message_grams USING GIN (grams) WITH (gin_pending_list_limit = 512);
ALTER TABLE messages DROP COLUMN grams;
