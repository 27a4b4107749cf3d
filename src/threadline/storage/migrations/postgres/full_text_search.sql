-- postgres, full_text_search: full text search
ALTER TABLE messages ADD COLUMN scope TEXT;
ALTER TABLE messages ADD COLUMN search_text TEXT;
ALTER TABLE messages ADD COLUMN tsv tsvector;
CREATE INDEX messages_tsv ON messages USING GIN (tsv);
CREATE INDEX messages_scope ON messages (scope);
