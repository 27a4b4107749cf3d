-- postgres, scope_newest: a scope's newest messages in id order, for searches of frequent words,
-- which rank the scope's newest matches (see PostgresDialect.search).
CREATE INDEX messages_scope_id ON messages (scope, id);
DROP INDEX messages_scope;
