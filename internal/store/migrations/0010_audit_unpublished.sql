-- Audit records the event relay has not published yet: one row per record, written in the
-- record's own transaction and deleted once the bus has stored its event. The relay used to
-- publish records with IDs after a cursor, but IDs are taken before commit and concurrent
-- transactions commit out of ID order: a record that committed after the cursor had passed
-- its ID was never published. Records after the old cursor are still to be published.
CREATE TABLE audit_unpublished (
    id TEXT PRIMARY KEY
);
INSERT INTO audit_unpublished (id)
    SELECT id FROM audit_events WHERE id > COALESCE((SELECT position FROM relay_cursors WHERE name = 'audit'), '');
DROP TABLE relay_cursors;
