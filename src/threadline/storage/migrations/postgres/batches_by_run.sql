-- postgres, batches_by_run: save() counts what a run already stored by (run_id, branch_id): an index that leads with both.
CREATE INDEX batches_run_branch ON batches (run_id, branch_id);
DROP INDEX batches_run;
