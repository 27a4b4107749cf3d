-- sqlite, notebooks: Memory's notebooks, and the receipts that make a retried write apply once
CREATE TABLE notebooks (
    scope TEXT NOT NULL,
    namespace TEXT NOT NULL,
    content TEXT NOT NULL,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (scope, namespace)
);
CREATE TABLE notebook_ops (
    scope TEXT NOT NULL,
    namespace TEXT NOT NULL,
    operation_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (scope, namespace, operation_id)
)
