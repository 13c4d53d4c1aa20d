-- The device feed as rows (docs/ledger.md, "The device feed"): one per
-- delivery a retraction takes, keyed by the device and the retraction's
-- place in the feed, so that a device's page is one index range scan
-- instead of its deliveries joined with the app's retractions on every call.
--
-- Written in the transaction that makes the retraction (the trigger below:
-- every delivery of its references, or that its selector takes), and in the
-- one that records a delivery a retraction made earlier takes (the store,
-- next to the late retraction it makes then). Partitioned by the delivery's
-- day as deliveries are, with the same bounds, so retention drops a day of
-- both together and the feed lists what it listed when it read deliveries:
-- a retraction whose deliveries are all gone leaves the feed with them.
-- Dry runs take nothing.
CREATE TABLE device_feed (
    app_id         bigint      NOT NULL,
    token          bytea       NOT NULL,
    -- The retraction's created_xid: its place in the feed, as in the cursor.
    retraction_xid xid8        NOT NULL,
    retraction_id  uuid        NOT NULL,
    reference      text        NOT NULL,
    sent_on        date        NOT NULL,
    retracted_at   timestamptz NOT NULL,
    PRIMARY KEY (app_id, token, retraction_xid, retraction_id, reference, sent_on)
) PARTITION BY RANGE (sent_on);

-- A day's partition of deliveries comes with the feed's for the same day.
CREATE OR REPLACE FUNCTION retract_ensure_delivery_partition(day date) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    parent text;
    partition_name text;
BEGIN
    IF to_regclass(quote_ident(current_schema()) || '.deliveries_' || to_char(day, 'YYYYMMDD')) IS NOT NULL
       AND to_regclass(quote_ident(current_schema()) || '.device_feed_' || to_char(day, 'YYYYMMDD')) IS NOT NULL THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('retract.deliveries.partitions'));
    FOREACH parent IN ARRAY ARRAY['deliveries', 'device_feed'] LOOP
        partition_name := parent || '_' || to_char(day, 'YYYYMMDD');
        BEGIN
            IF to_regclass(quote_ident(current_schema()) || '.' || partition_name) IS NULL THEN
                EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', partition_name, parent, day, day + 1);
            END IF;
        EXCEPTION WHEN duplicate_table THEN
            NULL;
        END;
    END LOOP;
END
$$;

-- The feed's partitions for the days deliveries already has.
DO $$
DECLARE
    day date;
BEGIN
    FOR day IN
        SELECT to_date(substr(c.relname, 12), 'YYYYMMDD')
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'deliveries'::regclass AND c.relname ~ '^deliveries_[0-9]{8}$'
    LOOP
        PERFORM retract_ensure_delivery_partition(day);
    END LOOP;
END
$$;

-- What a new retraction takes, into the feed, in its own transaction: the
-- references' locks (or the label's) it holds keep deliveries of them from
-- being recorded meanwhile. Then, to every server listening on
-- `retract_feed`, when the transaction commits: the app, the retraction's
-- place, and the devices it took, as the first 8 bytes of each token's
-- SHA-256 in hex ("<app id> <created_xid> <digest>,<digest>,..."), 400 to a
-- notification; or "*" for all of them, past 100,000 devices. A server
-- answers "nothing new" from memory for the devices it was not told of.
CREATE FUNCTION retract_feed_take() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    taken bigint;
    digests text[];
    head text := NEW.app_id::text || ' ' || NEW.created_xid::text || ' ';
    -- The deliveries it takes: of its references, or of its label (by name, so that its partial index is used) and range.
    taken_deliveries text := CASE WHEN NEW.selector_kind IS NULL
        THEN 'FROM deliveries d WHERE d.app_id = $4 AND d.reference = ANY ($8)'
        ELSE format('FROM deliveries d WHERE d.app_id = $4 AND d.%I = $5 AND d.sent_at >= coalesce($6, ''-infinity'') AND d.sent_at < $7',
                    NEW.selector_kind)
    END;
BEGIN
    EXECUTE 'INSERT INTO device_feed (app_id, token, retraction_xid, retraction_id, reference, sent_on, retracted_at)
             SELECT d.app_id, d.token, $1, $2, d.reference, d.sent_on, $3 ' || taken_deliveries
        USING NEW.created_xid, NEW.id, NEW.created_at, NEW.app_id, NEW.selector_value, NEW.sent_after, NEW.sent_before, NEW.refs;
    GET DIAGNOSTICS taken = ROW_COUNT;
    IF taken = 0 THEN
        RETURN NULL;
    ELSIF taken > 100000 THEN
        PERFORM pg_notify('retract_feed', head || '*');
        RETURN NULL;
    END IF;
    EXECUTE 'SELECT ARRAY(SELECT DISTINCT encode(substr(sha256(d.token), 1, 8), ''hex'') ' || taken_deliveries || ')'
        INTO digests
        USING NEW.created_xid, NEW.id, NEW.created_at, NEW.app_id, NEW.selector_value, NEW.sent_after, NEW.sent_before, NEW.refs;
    FOR chunk IN 0 .. (cardinality(digests) - 1) / 400 LOOP
        PERFORM pg_notify('retract_feed', head || array_to_string(digests[chunk * 400 + 1 : chunk * 400 + 400], ','));
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER retractions_feed
    AFTER INSERT ON retractions
    FOR EACH ROW WHEN (NOT NEW.dry_run) EXECUTE FUNCTION retract_feed_take();

-- The retractions made before this migration, as the feed listed them.
INSERT INTO device_feed (app_id, token, retraction_xid, retraction_id, reference, sent_on, retracted_at)
SELECT d.app_id, d.token, r.created_xid, r.id, d.reference, d.sent_on, r.created_at
FROM retractions r
JOIN deliveries d ON d.app_id = r.app_id AND d.reference = ANY (r.refs)
WHERE NOT r.dry_run AND r.selector_kind IS NULL;
INSERT INTO device_feed (app_id, token, retraction_xid, retraction_id, reference, sent_on, retracted_at)
SELECT d.app_id, d.token, r.created_xid, r.id, d.reference, d.sent_on, r.created_at
FROM retractions r
JOIN deliveries d ON d.app_id = r.app_id
 AND CASE r.selector_kind WHEN 'thread' THEN d.thread WHEN 'sender' THEN d.sender
                          WHEN 'recipient' THEN d.recipient ELSE d.campaign END = r.selector_value
 AND d.sent_at >= coalesce(r.sent_after, '-infinity') AND d.sent_at < r.sent_before
WHERE NOT r.dry_run AND r.selector_kind IS NOT NULL;

-- An app's newest place in the feed, which a server reads once per app
-- before it answers "nothing new" from memory.
CREATE INDEX retractions_by_app_and_xid ON retractions (app_id, created_xid) WHERE NOT dry_run;

-- A server answering the feed from memory keeps the keys that read it
-- there too: a key revoked, or its apps changed, tells it at commit.
CREATE FUNCTION retract_feed_keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('retract_feed', 'keys');
    RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_changed_feed
    AFTER UPDATE OR DELETE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION retract_feed_keys_changed();
CREATE TRIGGER api_key_apps_changed_feed
    AFTER UPDATE OR DELETE ON api_key_apps
    FOR EACH STATEMENT EXECUTE FUNCTION retract_feed_keys_changed();
