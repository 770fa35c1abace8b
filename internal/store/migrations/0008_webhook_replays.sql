-- Webhook deliveries are also remembered by their payload's identity (webhook.Digest: the SHA-256
-- of provider, trigger and raw body), so that a signed body replayed with a new or no delivery id
-- starts no second build. Cron fires keep using the table with an empty digest; rows with a
-- digest are swept once older than the replay window.
ALTER TABLE webhook_deliveries ADD COLUMN payload_digest TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX webhook_deliveries_payload ON webhook_deliveries (trigger_id, payload_digest) WHERE payload_digest <> '';
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
