-- Completion webhooks (docs/api.md, "Webhooks"): an app may name one https
-- URL and a secret; when one of its retractions ends (done or failed, not a
-- dry run), the ledger queues one delivery of its final account in the same
-- transaction, and the workers POST it, signed, retrying with backoff for a
-- day. The retraction never waits for it.

-- The secret is kept as given: it signs every delivery (docs/security.md).
CREATE TABLE app_webhooks (
    app_id      bigint PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
    url         text NOT NULL,
    secret      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- One delivery per finished retraction, claimed as work items are: with
-- FOR UPDATE SKIP LOCKED and a lease (`run_after` moves to the lease's end),
-- so a worker that dies mid-POST leaves it to another.
CREATE TABLE webhook_deliveries (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    retraction_id     uuid NOT NULL UNIQUE REFERENCES retractions (id) ON DELETE CASCADE,
    app_id            bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    -- The URL of the last attempt (the app's at the time of each attempt).
    url               text NOT NULL,
    run_after         timestamptz NOT NULL DEFAULT now(),
    claim             uuid,
    claimed_by        text,
    attempts          integer NOT NULL DEFAULT 0,
    last_status       integer,
    last_error        text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    first_attempt_at  timestamptz,
    delivered_at      timestamptz,
    gave_up_at        timestamptz
);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (run_after, id)
    WHERE delivered_at IS NULL AND gave_up_at IS NULL;

-- Queues the delivery of a retraction that just ended, if its app has a
-- webhook, and wakes idle workers (the channel of migration 0008).
CREATE FUNCTION queue_webhook_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (retraction_id, app_id, url)
    SELECT NEW.id, NEW.app_id, w.url FROM app_webhooks w WHERE w.app_id = NEW.app_id
    ON CONFLICT (retraction_id) DO NOTHING;
    IF FOUND THEN
        PERFORM pg_notify('retract_work', '');
    END IF;
    RETURN NULL;
END
$$;

-- A retraction with nothing to send ends as it is made.
CREATE TRIGGER retractions_inserted_finished_webhook
    AFTER INSERT ON retractions FOR EACH ROW
    WHEN (NEW.state IN ('done', 'failed') AND NOT NEW.dry_run)
    EXECUTE FUNCTION queue_webhook_delivery();

CREATE TRIGGER retractions_finished_webhook
    AFTER UPDATE OF state ON retractions FOR EACH ROW
    WHEN (NEW.state IN ('done', 'failed') AND OLD.state NOT IN ('done', 'failed') AND NOT NEW.dry_run)
    EXECUTE FUNCTION queue_webhook_delivery();
