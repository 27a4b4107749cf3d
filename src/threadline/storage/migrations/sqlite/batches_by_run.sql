-- sqlite, batches_by_run: save() counts what a run already stored by (run_id, branch_id): without this index SQLite
-- scanned every batch of the branch (1.67 ms at 12.5k batches against 0.002 ms).
CREATE INDEX batches_run_branch ON batches (run_id, branch_id);
DROP INDEX batches_run;
