-- sqlite, store_identity: A random id minted once per store. The tip book outside the store keys
-- each conversation's newest seal by it (not by the path, which a move changes), and a store that
-- has this migration but no id was edited: see trust/_seal.py.
INSERT INTO threadline_meta (key, value) VALUES ('store_id', lower(hex(randomblob(16)))) ON CONFLICT DO NOTHING;
