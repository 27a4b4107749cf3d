-- sqlite, full_text_search: full text search
CREATE VIRTUAL TABLE message_fts USING fts5(body, ctok, stok, tokenize='unicode61');
