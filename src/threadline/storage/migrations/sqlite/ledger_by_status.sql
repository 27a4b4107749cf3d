-- sqlite, ledger_by_status: a run start asks for a conversation's ledger rows still `started`. Indexed by
-- conversation alone, that read visited every row the conversation ever recorded (0.9 ms at 11k
-- tool calls, growing with each turn). With the status in the index it visits only those rows.
-- The conversation prefix still serves reads and erasure by conversation.
DROP INDEX tool_effects_conversation;
CREATE INDEX tool_effects_conversation_status ON tool_effects (conversation_id, status)
