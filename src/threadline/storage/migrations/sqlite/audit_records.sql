-- sqlite, audit_records: audit records
CREATE TABLE outcome_receipts (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    run_id TEXT,
    expected_effect TEXT NOT NULL,
    destination TEXT,
    idempotency_key TEXT,
    observed_revision TEXT,
    evidence_ref TEXT,
    strength TEXT NOT NULL,
    observed_at TEXT NOT NULL
);
CREATE INDEX outcome_receipts_conversation ON outcome_receipts (conversation_id);
CREATE TABLE wait_records (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    run_id TEXT,
    owner TEXT NOT NULL,
    decision TEXT NOT NULL,
    deadline TEXT NOT NULL,
    resume_token TEXT NOT NULL,
    created_at TEXT NOT NULL,
    resolved_at TEXT
);
CREATE INDEX wait_records_conversation ON wait_records (conversation_id);
CREATE TABLE audit_events (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    tool_call_hash TEXT,
    position INTEGER,
    observed_at TEXT NOT NULL
);
CREATE INDEX audit_events_conversation ON audit_events (conversation_id);
