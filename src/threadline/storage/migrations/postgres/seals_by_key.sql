-- postgres, seals_by_key: a server names, when it starts, the key ids of seals it holds no key for; this index
-- finds the distinct ids in one seek each instead of a read of every seal.
CREATE INDEX seals_key ON seals (key_id);
