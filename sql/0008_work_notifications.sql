-- Wakes idle workers at once when work becomes due now (docs/engine.md,
-- "Waking on new work"): a new retraction's first page, the rest of a split
-- page, a late delivery's push, an item given back by a stopping worker.
-- Workers LISTEN on `retract_work`; PostgreSQL delivers the notification
-- when the transaction commits, and folds a transaction's notifications
-- into one. Items due later (retries, backoffs) send none: a worker's
-- fallback poll finds them, as it finds work whose notification was lost.
-- Per statement, not per row: a batch of late deliveries notifies once.
CREATE FUNCTION notify_work_due() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM due_items WHERE claim IS NULL AND run_after <= clock_timestamp()) THEN
        PERFORM pg_notify('retract_work', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER work_items_inserted_notify
    AFTER INSERT ON work_items REFERENCING NEW TABLE AS due_items
    FOR EACH STATEMENT EXECUTE FUNCTION notify_work_due();

CREATE TRIGGER work_items_released_notify
    AFTER UPDATE ON work_items REFERENCING NEW TABLE AS due_items
    FOR EACH STATEMENT EXECUTE FUNCTION notify_work_due();
