-- postgres, snapshot_pending: the messages a snapshot holds past its position that the log does not
-- hold yet (a request built and not sent: SnapshotMark.pending), as one JSON array; NULL for none
ALTER TABLE snapshots ADD COLUMN pending TEXT;
