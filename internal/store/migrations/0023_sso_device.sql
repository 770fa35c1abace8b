-- The device flow of single sign-on (freshet login --sso --device, RFC 8628 with the control
-- plane as the device-authorization server). A CLI without a browser asks for a device code (its
-- SHA-256 is the key) and a short user code (its SHA-256 too); a person enters the user code on
-- the control plane's verification page, confirms, and logs in through the account's identity
-- provider. status is pending, approved (user_id and issuer set) or denied (reason set). The CLI
-- polls with the device code at interval_secs (grown by 5 s each time it polls too fast); an
-- approved row is deleted when its session is opened (once), any row is worthless after
-- expires_at. client_ip and client_agent are what the verification page shows of the request.
CREATE TABLE sso_device_requests (
    device_hash    TEXT PRIMARY KEY,
    user_code_hash TEXT NOT NULL UNIQUE,
    account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    client_ip      TEXT NOT NULL,
    client_agent   TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    interval_secs  INTEGER NOT NULL,
    last_poll_at   BIGINT NOT NULL DEFAULT 0,
    status         TEXT NOT NULL DEFAULT 'pending',
    user_id        TEXT NOT NULL DEFAULT '',
    issuer         TEXT NOT NULL DEFAULT '',
    reason         TEXT NOT NULL DEFAULT ''
);

-- A login in flight that approves a device request names it (its device_hash; '' otherwise).
ALTER TABLE sso_logins ADD COLUMN device_hash TEXT NOT NULL DEFAULT '';
