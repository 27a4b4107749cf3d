-- postgres, seals: The keyed seal over each conversation's records (see trust/_seal.py): one row per write.
CREATE TABLE seals (
    conversation_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    facts TEXT NOT NULL,
    key_id TEXT NOT NULL,
    tag TEXT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
);
