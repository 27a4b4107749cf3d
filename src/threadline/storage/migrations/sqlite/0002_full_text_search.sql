-- sqlite migration 2: full text search
CREATE VIRTUAL TABLE message_fts USING fts5(body, ctok, stok, tokenize='unicode61');
