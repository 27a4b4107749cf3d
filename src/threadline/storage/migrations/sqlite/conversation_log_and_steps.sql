-- sqlite, conversation_log_and_steps: conversation log and steps
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    head_branch INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    title TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0,
    run_count INTEGER NOT NULL DEFAULT 0,
    usage TEXT NOT NULL,
    forked_from TEXT,
    forked_at INTEGER,
    chain_head TEXT NOT NULL,
    quarantine TEXT
);
CREATE INDEX conversations_scope_updated ON conversations (scope, updated_at DESC);
CREATE TABLE branches (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    parent_branch INTEGER,
    fork_position INTEGER NOT NULL,
    length INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX branches_conversation ON branches (conversation_id);
CREATE INDEX branches_parent ON branches (parent_branch);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    branch_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    conversation_id TEXT NOT NULL,
    run_id TEXT,
    body TEXT NOT NULL,
    UNIQUE (branch_id, position)
);
CREATE INDEX messages_conversation ON messages (conversation_id);
CREATE TABLE batches (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    branch_id INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end_ INTEGER NOT NULL,
    provenance TEXT NOT NULL,
    run_id TEXT,
    prev_link TEXT NOT NULL,
    link TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX batches_branch ON batches (branch_id, start);
CREATE INDEX batches_run ON batches (run_id);
CREATE INDEX batches_conversation ON batches (conversation_id);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    model_name TEXT,
    output TEXT,
    usage TEXT,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX runs_conversation ON runs (conversation_id);
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    conversation_id TEXT,
    kind TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    tool_call_id TEXT,
    tool_name TEXT,
    error TEXT,
    idempotency_key TEXT,
    timestamp TEXT NOT NULL
);
CREATE INDEX events_run ON events (run_id, id);
CREATE INDEX events_conversation ON events (conversation_id);
CREATE UNIQUE INDEX events_key ON events (run_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE TABLE snapshots (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    branch_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    state TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    idempotency_key TEXT,
    timestamp TEXT NOT NULL
);
CREATE INDEX snapshots_run ON snapshots (run_id, id);
CREATE INDEX snapshots_conversation ON snapshots (conversation_id);
CREATE UNIQUE INDEX snapshots_key ON snapshots (run_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE TABLE tool_effects (
    run_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    conversation_id TEXT,
    tool_name TEXT NOT NULL,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    idempotency_key TEXT,
    summary TEXT,
    PRIMARY KEY (run_id, tool_call_id)
);
CREATE INDEX tool_effects_conversation ON tool_effects (conversation_id);
CREATE TABLE threadline_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
