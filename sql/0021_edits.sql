-- Edits (docs/api.md, "Edits"): a retraction row whose pushes carry a new
-- text for its one reference instead of its removal. It is queued, sent,
-- cancelled, approved and accounted for as any retraction, but it takes
-- nothing: the device feed does not list it, it does not ride along with
-- later retractions, and a delivery recorded after it is sent the edit
-- (the newest of its reference), not a removal.
ALTER TABLE retractions
    -- The new title (NULL: the phone keeps the one shown, where it can) and body; NULL body: not an edit.
    ADD COLUMN edit_title text,
    ADD COLUMN edit_body text,
    -- The conversation its alerts show under (`aps.thread-id`): the thread recorded with the reference's deliveries.
    ADD COLUMN edit_thread text,
    ADD CONSTRAINT retractions_edit_fields CHECK (edit_body IS NOT NULL OR (edit_title IS NULL AND edit_thread IS NULL)),
    ADD CONSTRAINT retractions_edit_one_reference CHECK (edit_body IS NULL OR (selector_kind IS NULL AND cardinality(refs) = 1));

-- An edit is no removal: the feed lists retractions only.
DROP TRIGGER retractions_feed ON retractions;
CREATE TRIGGER retractions_feed
    AFTER INSERT ON retractions
    FOR EACH ROW WHEN (NOT NEW.dry_run AND NEW.state <> 'awaiting-approval' AND NEW.edit_body IS NULL)
    EXECUTE FUNCTION retract_feed_take();
DROP TRIGGER retractions_feed_approved ON retractions;
CREATE TRIGGER retractions_feed_approved
    AFTER UPDATE OF state ON retractions
    FOR EACH ROW WHEN (OLD.state = 'awaiting-approval' AND NEW.state = 'queued' AND NEW.edit_body IS NULL)
    EXECUTE FUNCTION retract_feed_take();

-- The app's newest place in the feed, which edits do not move.
DROP INDEX retractions_by_app_and_xid;
CREATE INDEX retractions_by_app_and_xid ON retractions (app_id, created_xid) WHERE NOT dry_run AND edit_body IS NULL;
