-- Cancel (docs/api.md, "Cancel a retraction"): a retraction stopped by a
-- person before its end. `cancelling` while the pages in flight finish their
-- pushes, `cancelled` once they have; the devices not reached are `spared`.
ALTER TABLE retractions DROP CONSTRAINT retractions_state_check;
ALTER TABLE retractions ADD CONSTRAINT retractions_state_check
    CHECK (state IN ('queued', 'sending', 'cancelling', 'done', 'failed', 'cancelled'));

ALTER TABLE retractions
    ADD COLUMN spared        integer     NOT NULL DEFAULT 0,
    ADD COLUMN cancelled_by  text,
    ADD COLUMN cancel_reason text,
    ADD COLUMN cancelled_at  timestamptz,
    -- Whether its rows left the device feed (retract_feed_forget): after
    -- the cancel, not in its transaction, so that a cancel of millions of
    -- devices stops them at once; a server's chores finish what a crash left.
    ADD COLUMN feed_forgotten boolean NOT NULL DEFAULT false;

CREATE INDEX retractions_feed_to_forget ON retractions (id)
    WHERE state IN ('cancelling', 'cancelled') AND NOT feed_forgotten;

-- A cancelled retraction's completion webhook fires as a finished one's does.
DROP TRIGGER retractions_finished_webhook ON retractions;
CREATE TRIGGER retractions_finished_webhook
    AFTER UPDATE OF state ON retractions FOR EACH ROW
    WHEN (NEW.state IN ('done', 'failed', 'cancelled') AND OLD.state NOT IN ('done', 'failed', 'cancelled') AND NOT NEW.dry_run)
    EXECUTE FUNCTION queue_webhook_delivery();

-- Takes a cancelled retraction out of the device feed, once: the rows
-- retract_feed_take wrote for it (and the store for deliveries recorded
-- later), found as it found them, through the deliveries' indexes. A phone
-- that reads its feed after the cancel is not told to remove what the cancel
-- spared it.
CREATE FUNCTION retract_feed_forget(retraction uuid) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    r retractions%ROWTYPE;
    forgotten bigint;
BEGIN
    SELECT * INTO r FROM retractions WHERE id = retraction;
    IF NOT FOUND OR r.dry_run OR r.feed_forgotten OR r.state NOT IN ('cancelling', 'cancelled') THEN
        RETURN 0;
    END IF;
    EXECUTE 'DELETE FROM device_feed f USING deliveries d
             WHERE f.app_id = d.app_id AND f.token = d.token AND f.retraction_xid = $1 AND f.retraction_id = $2
               AND f.reference = d.reference AND f.sent_on = d.sent_on AND d.app_id = $3 AND ' ||
        CASE WHEN r.selector_kind IS NULL
            THEN 'd.reference = ANY ($7)'
            ELSE format('d.%I = $4 AND d.sent_at >= coalesce($5, ''-infinity'') AND d.sent_at < $6', r.selector_kind)
        END
        USING r.created_xid, r.id, r.app_id, r.selector_value, r.sent_after, r.sent_before, r.refs;
    GET DIAGNOSTICS forgotten = ROW_COUNT;
    UPDATE retractions SET feed_forgotten = true WHERE id = retraction;
    RETURN forgotten;
END
$$;
