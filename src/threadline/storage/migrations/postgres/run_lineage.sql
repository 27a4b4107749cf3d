-- postgres, run_lineage: where a run came from, under the names pydantic-ai-harness uses: the run
-- that started it (parent_run_id), the agent's name, free-form metadata (JSON object of
-- strings) and the registration that claimed the run id.
ALTER TABLE runs ADD COLUMN parent_run_id TEXT;
ALTER TABLE runs ADD COLUMN agent_name TEXT;
ALTER TABLE runs ADD COLUMN metadata TEXT;
ALTER TABLE runs ADD COLUMN registration_id TEXT;
CREATE INDEX runs_parent ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;
