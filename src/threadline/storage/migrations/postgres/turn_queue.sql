-- postgres, turn_queue: the turns waiting for a conversation's lease, in arrival order (the ticket),
-- each kept only while its claimant keeps asking (see TurnLeases)
CREATE TABLE turn_queue (
    ticket BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    holder TEXT NOT NULL,
    seen_until DOUBLE PRECISION NOT NULL,
    UNIQUE (scope, conversation_id, holder)
);
