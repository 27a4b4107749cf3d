-- sqlite, turn_leases: who is answering a conversation's turn now (see TurnLeases)
CREATE TABLE turn_leases (
    scope TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    holder TEXT NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (scope, conversation_id)
)
