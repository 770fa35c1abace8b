-- How far each outbox relay has published (the ID of the last record sent).
CREATE TABLE relay_cursors (
    name     TEXT PRIMARY KEY,
    position TEXT NOT NULL
);
