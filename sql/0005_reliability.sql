-- No device lost, whatever fails: a dead token comes back with a newer
-- delivery, a retraction counts the known-dead devices it skips, work that
-- cannot reach its push service waits for it, retries are budgeted in time,
-- and an idempotent send that stopped part-way keeps what it sent.

-- When Retract learned a token was dead (the push service's answer). A
-- delivery recorded after it was made to a token the app registered again,
-- so the token is tried again for it; earlier deliveries are skipped.
COMMENT ON COLUMN dead_tokens.recorded_at IS
    'when the push service answered that the token is dead; deliveries recorded after it revive the token';

-- Every device of a retraction's references, the known-dead ones included: a
-- retraction's total. The worker counts the known-dead ones it skips as dead
-- (and as skipped), so a done retraction has sent + dead + failed = total.
CREATE OR REPLACE FUNCTION retract_device_count(app bigint, refs text[]) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT count(DISTINCT token) FROM deliveries WHERE app_id = app AND reference = ANY(refs)
$$;

-- Of those, the devices every delivery of which is older than the token's
-- death: what a retraction will skip. Read for dry runs only.
CREATE FUNCTION retract_known_dead_count(app bigint, refs text[]) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM (
        SELECT d.token, max(d.sent_at) AS newest FROM deliveries d WHERE d.app_id = app AND d.reference = ANY(refs) GROUP BY d.token
    ) d
    JOIN dead_tokens dt ON dt.app_id = app AND dt.token = d.token
    WHERE d.newest <= dt.recorded_at
$$;

-- Known-dead devices a retraction skipped (they are in `dead` too).
ALTER TABLE retractions ADD COLUMN skipped bigint NOT NULL DEFAULT 0 CHECK (skipped >= 0);

-- claims: claims of this row that did not end with it finished (a worker that
-- died, a result the database refused); past a bound the item is given up.
-- `attempts` counts pushes to a device across its retries, this the row's own.
-- first_failed_at: when the device of a `push` item was first answered with a
-- retryable error; the retry budget runs from then.
-- waiting: devices of the item whose push could not reach the service at the
-- last attempt (it was unreachable); a retraction's waiting devices are the
-- sum over its items. waiting_since: since when, without a break.
ALTER TABLE work_items
    ADD COLUMN claims integer NOT NULL DEFAULT 0 CHECK (claims >= 0),
    ADD COLUMN first_failed_at timestamptz,
    ADD COLUMN waiting integer NOT NULL DEFAULT 0 CHECK (waiting >= 0),
    ADD COLUMN waiting_since timestamptz;

-- What a POST /v1/notifications sent before it stopped (JSON): kept with the
-- idempotency key, so a retry with the key sends only the rest.
ALTER TABLE idempotency_records ADD COLUMN partial bytea;
