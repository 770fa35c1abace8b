-- Notifications (internal/notify, docs/notifications.md): an account's channels (webhook,
-- Slack-compatible incoming webhook, email over SMTP), the subscriptions that route CI and CD
-- events to them, the delivery queue and its log. Times are unix microseconds.

-- config is the channel's public settings as JSON (a webhook's URL, an SMTP server, sender and
-- recipients); secret is a secrets ciphertext bound to the account and name holding what is
-- never shown (a webhook's signing secret, a Slack URL, an SMTP password), '' when none.
CREATE TABLE notification_channels (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    config     TEXT NOT NULL,
    secret     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (account_id, name)
);

-- events is a JSON array of event kinds; pipeline and application narrow them ('' = any).
CREATE TABLE notification_subscriptions (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    channel_id  TEXT NOT NULL REFERENCES notification_channels (id) ON DELETE CASCADE,
    events      TEXT NOT NULL,
    pipeline    TEXT NOT NULL,
    application TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX notification_subscriptions_account ON notification_subscriptions (account_id);

-- One row per channel and event (the bus key of the event): an event delivered twice queues
-- nothing more. status is pending, delivered or failed; a pending row is sent at
-- next_attempt_at, which a sender moves forward to claim it.
CREATE TABLE notification_deliveries (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    channel_id      TEXT NOT NULL REFERENCES notification_channels (id) ON DELETE CASCADE,
    event_key       TEXT NOT NULL,
    kind            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    last_error      TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    UNIQUE (channel_id, event_key)
);
CREATE INDEX notification_deliveries_due ON notification_deliveries (status, next_attempt_at);
CREATE INDEX notification_deliveries_account ON notification_deliveries (account_id, id);
CREATE INDEX notification_deliveries_updated ON notification_deliveries (updated_at);

-- Every attempt of a delivery: when, how long, the HTTP status (0 for email or no answer) and
-- the error ('' when it was delivered).
CREATE TABLE notification_attempts (
    delivery_id  TEXT NOT NULL REFERENCES notification_deliveries (id) ON DELETE CASCADE,
    attempt      INTEGER NOT NULL,
    account_id   TEXT NOT NULL,
    at           BIGINT NOT NULL,
    duration_us  BIGINT NOT NULL,
    status_code  INTEGER NOT NULL,
    error        TEXT NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);
