-- Leader leases: one row per singleton job (the cron executor's is "cron"). epoch grows by one
-- each time the holder changes and is never reset (a release keeps the row), so it is a fencing
-- token. expires is in unix microseconds of the holder's clock.
CREATE TABLE leader_leases (
    name    TEXT PRIMARY KEY,
    holder  TEXT NOT NULL,
    expires BIGINT NOT NULL,
    epoch   BIGINT NOT NULL
);

-- One row per cron run that a leader claimed: (schedule_id, scheduled_at) is the exactly-once key.
-- status is claimed (fire in progress or in doubt), fired or failed.
CREATE TABLE cron_fires (
    schedule_id  TEXT NOT NULL,
    scheduled_at BIGINT NOT NULL,
    status       TEXT NOT NULL,
    holder       TEXT NOT NULL,
    epoch        BIGINT NOT NULL,
    attempts     INTEGER NOT NULL,
    claimed_at   BIGINT NOT NULL,
    finished_at  BIGINT NOT NULL,
    last_error   TEXT NOT NULL,
    PRIMARY KEY (schedule_id, scheduled_at)
);
CREATE INDEX cron_fires_status ON cron_fires (status, scheduled_at);
