-- sqlite, turn_queue: the turns waiting for a conversation's lease, in arrival order (the ticket),
-- each kept only while its claimant keeps asking (see TurnLeases)
CREATE TABLE turn_queue (
    ticket INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    holder TEXT NOT NULL,
    seen_until REAL NOT NULL,
    UNIQUE (scope, conversation_id, holder)
)
