-- postgres, gin_pending_lists: small GIN pending lists. New index entries wait in a pending list that
-- every search through the index reads in full until vacuum merges it. At the default 4 MB that
-- was up to 512 pages (about 5 ms) added to each query after a bulk write, and the insert that
-- overflowed it merged 4 MB at once; 512 kB bounds both at an eighth.
ALTER INDEX messages_tsv SET (gin_pending_list_limit = 512);
ALTER INDEX messages_grams SET (gin_pending_list_limit = 512);
