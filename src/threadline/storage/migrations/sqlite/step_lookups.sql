-- sqlite, step_lookups: one index per step table answers both the run's rows and a retried write.
-- The unique (run_id, idempotency_key) index, now over every row (NULL keys stay distinct, so
-- rows without a key are never refused), also finds a run's events and snapshots, which the
-- (run_id, id) indexes did: those are dropped, as much again as the rows on disk.
DROP INDEX events_run;
DROP INDEX events_key;
CREATE UNIQUE INDEX events_key ON events (run_id, idempotency_key);
DROP INDEX snapshots_run;
DROP INDEX snapshots_key;
CREATE UNIQUE INDEX snapshots_key ON snapshots (run_id, idempotency_key);
