-- postgres, gram_table: the gram index in a table of its own, as SQLite keeps it. Only messages
-- holding CJK characters or symbols have grams (8% of the benchmark's 1M messages). On the message
-- rows, a store-wide CJK query read wide rows (body, text, both vectors) to find the newest matches
-- (20,000 for a frequent word); a gram row holds an id, a scope and the compressed vector (about
-- 1 kB), so 8 or more share a page, and the message row is read for the best few matches only.
CREATE TABLE message_grams (
    id BIGINT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    scope TEXT,
    grams tsvector NOT NULL
);
INSERT INTO message_grams (id, scope, grams) SELECT id, scope, grams FROM messages WHERE grams IS NOT NULL;
CREATE INDEX message_grams_grams ON message_grams USING GIN (grams) WITH (gin_pending_list_limit = 512);
ALTER TABLE messages DROP COLUMN grams;
