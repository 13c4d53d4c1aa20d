-- One row per notification (an app's reference): when it was first and last
-- sent, and the conversation and campaign its deliveries were first recorded
-- with (the earliest sent, within a batch). What the
-- notification list (GET /v1/notifications, the console) reads in the order
-- it shows, newest last send first, so that a page reads as many rows as it
-- shows, however many deliveries the ledger holds (docs/ledger.md).
--
-- A trigger on deliveries keeps it, in the transaction that records them,
-- whatever records them: `retract record`, the API, COPY, an older binary
-- still running during an upgrade. Retention deletes the rows whose last
-- send is older than the deliveries it keeps.
CREATE TABLE notifications (
    app_id        bigint      NOT NULL REFERENCES apps (id),
    reference     text        NOT NULL,
    first_sent_at timestamptz NOT NULL,
    last_sent_at  timestamptz NOT NULL,
    thread        text,
    campaign      text,
    PRIMARY KEY (app_id, reference)
);
-- The list's order within an app, and within a conversation or a campaign.
CREATE INDEX notifications_by_last_sent ON notifications (app_id, last_sent_at DESC, reference);
CREATE INDEX notifications_by_thread ON notifications (app_id, thread, last_sent_at DESC, reference) WHERE thread IS NOT NULL;
CREATE INDEX notifications_by_campaign ON notifications (app_id, campaign, last_sent_at DESC, reference) WHERE campaign IS NOT NULL;

-- A batch's notifications, in key order so that two batches sharing
-- references lock their rows in the same order. A row is written only when
-- the batch moves its times or gives it a first label.
CREATE FUNCTION retract_note_notifications() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO notifications AS n (app_id, reference, first_sent_at, last_sent_at, thread, campaign)
    SELECT app_id, reference, min(sent_at), max(sent_at),
           (array_agg(thread ORDER BY sent_at) FILTER (WHERE thread IS NOT NULL))[1],
           (array_agg(campaign ORDER BY sent_at) FILTER (WHERE campaign IS NOT NULL))[1]
    FROM recorded
    GROUP BY app_id, reference
    ORDER BY app_id, reference
    ON CONFLICT (app_id, reference) DO UPDATE
        SET first_sent_at = least(n.first_sent_at, excluded.first_sent_at),
            last_sent_at = greatest(n.last_sent_at, excluded.last_sent_at),
            thread = coalesce(n.thread, excluded.thread),
            campaign = coalesce(n.campaign, excluded.campaign)
        WHERE excluded.first_sent_at < n.first_sent_at OR excluded.last_sent_at > n.last_sent_at
           OR (n.thread IS NULL AND excluded.thread IS NOT NULL)
           OR (n.campaign IS NULL AND excluded.campaign IS NOT NULL);
    RETURN NULL;
END
$$;

CREATE TRIGGER deliveries_note_notifications AFTER INSERT ON deliveries
    REFERENCING NEW TABLE AS recorded FOR EACH STATEMENT EXECUTE FUNCTION retract_note_notifications();

-- The notifications of the deliveries already kept: one pass over them.
INSERT INTO notifications (app_id, reference, first_sent_at, last_sent_at, thread, campaign)
SELECT app_id, reference, min(sent_at), max(sent_at),
       (array_agg(thread ORDER BY sent_at) FILTER (WHERE thread IS NOT NULL))[1],
       (array_agg(campaign ORDER BY sent_at) FILTER (WHERE campaign IS NOT NULL))[1]
FROM deliveries
GROUP BY app_id, reference;

-- What a failed webhook attempt stored is shown to every key that may read
-- the retraction: from now on a few words, never the raw error (which could
-- name addresses and internals). The raw texts stored before are replaced
-- by the words they come to.
UPDATE webhook_deliveries
SET last_error = CASE
        WHEN last_error ~* 'refused|errno: 111' THEN 'connection refused'
        WHEN last_error ~* 'reset|errno: 104' THEN 'connection reset'
        WHEN last_error ~* 'timeout|timed out|deadline' THEN 'timed out'
        WHEN last_error ~* 'handshake|certificate|ssl|tls' THEN 'TLS handshake failed'
        WHEN last_error ~* '^the account could not be read' THEN 'the account could not be read'
        ELSE 'connection failed'
    END || coalesce(substring(last_error FROM '; given up after [0-9]+ attempts$'), '')
WHERE last_error IS NOT NULL
  AND last_error !~ '^(the receiver answered [0-9]+|the app''s webhook was removed|the app was removed)';

-- Two processes creating the same day's partition at once: the second could
-- miss the first's table after waiting for the lock (an advisory lock does not
-- refresh the catalogue lookup) and fail with "already exists". It is there,
-- which is all the caller wanted.
CREATE OR REPLACE FUNCTION retract_ensure_delivery_partition(day date) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    partition_name text := 'deliveries_' || to_char(day, 'YYYYMMDD');
BEGIN
    IF to_regclass(quote_ident(current_schema()) || '.' || partition_name) IS NOT NULL THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('retract.deliveries.partitions'));
    IF to_regclass(quote_ident(current_schema()) || '.' || partition_name) IS NULL THEN
        EXECUTE format(
            'CREATE TABLE %I PARTITION OF deliveries FOR VALUES FROM (%L) TO (%L)',
            partition_name, day, day + 1
        );
    END IF;
EXCEPTION WHEN duplicate_table THEN
    NULL;
END
$$;
