-- Approval (docs/api.md, "Approval"): a second pair of eyes on mass
-- retractions. An app may set a threshold of devices; a retraction over it
-- is made `awaiting-approval`: nothing is queued, the device feed does not
-- list it and late deliveries are not retracted, until a second API key
-- with the `approve` scope approves it (it is then `queued`, as if made
-- then) or rejects it (`rejected`). One not decided within the app's window
-- is `expired`.
ALTER TABLE apps
    ADD COLUMN approval_threshold integer CHECK (approval_threshold >= 0),
    ADD COLUMN approval_window_minutes integer NOT NULL DEFAULT 1440
        CHECK (approval_window_minutes BETWEEN 1 AND 43200);

ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check
    CHECK (cardinality(scopes) >= 1 AND scopes <@ ARRAY['admin', 'record', 'send', 'retract', 'read', 'client', 'approve']);

ALTER TABLE retractions DROP CONSTRAINT retractions_state_check;
ALTER TABLE retractions ADD CONSTRAINT retractions_state_check
    CHECK (state IN ('awaiting-approval', 'queued', 'sending', 'cancelling', 'done', 'failed', 'cancelled', 'rejected', 'expired'));

ALTER TABLE retractions
    -- The API key that asked, to tell it from the one that approves.
    ADD COLUMN requested_key_id uuid,
    -- NULL: it needed no approval. Else awaiting, approved, rejected, expired, or withdrawn (cancelled while it awaited).
    ADD COLUMN approval text CHECK (approval IN ('awaiting', 'approved', 'rejected', 'expired', 'withdrawn')),
    ADD COLUMN approval_expires_at timestamptz,
    ADD COLUMN decided_by text,
    ADD COLUMN decision_reason text,
    ADD COLUMN decided_at timestamptz;

-- What the server's chores expire.
CREATE INDEX retractions_awaiting_approval ON retractions (approval_expires_at) WHERE state = 'awaiting-approval';

-- The feed lists a retraction once it may be sent: when made, or when approved.
DROP TRIGGER retractions_feed ON retractions;
CREATE TRIGGER retractions_feed
    AFTER INSERT ON retractions
    FOR EACH ROW WHEN (NOT NEW.dry_run AND NEW.state <> 'awaiting-approval') EXECUTE FUNCTION retract_feed_take();
CREATE TRIGGER retractions_feed_approved
    AFTER UPDATE OF state ON retractions
    FOR EACH ROW WHEN (OLD.state = 'awaiting-approval' AND NEW.state = 'queued') EXECUTE FUNCTION retract_feed_take();

-- A rejected or expired retraction's completion webhook fires as a finished one's does.
DROP TRIGGER retractions_finished_webhook ON retractions;
CREATE TRIGGER retractions_finished_webhook
    AFTER UPDATE OF state ON retractions FOR EACH ROW
    WHEN (NEW.state IN ('done', 'failed', 'cancelled', 'rejected', 'expired')
          AND OLD.state NOT IN ('done', 'failed', 'cancelled', 'rejected', 'expired') AND NOT NEW.dry_run)
    EXECUTE FUNCTION queue_webhook_delivery();
