-- What the HTTP API needs: idempotency records, and what the per-device
-- reconciliation feed (GET /v1/devices/{token}/retractions) reads.

-- The first answer to a POST that carried an Idempotency-Key, per API key.
-- A row without a status is a request still running under `claim`; its
-- server moves `claimed_at` on while it runs, so only a claim whose server
-- died (a minute without news) is taken over. Kept a day (retention pass).
CREATE TABLE idempotency_records (
    api_key_id   uuid   NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    key          text   NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_hash bytea  NOT NULL,
    claim        uuid   NOT NULL,
    status       integer,
    body         bytea,
    location     text,
    claimed_at   timestamptz NOT NULL DEFAULT now(),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (api_key_id, key)
);
CREATE INDEX idempotency_records_by_age ON idempotency_records (created_at);

-- The transaction that made each retraction. The feed pages in this order
-- and only up to the oldest transaction still running, so a retraction that
-- commits late (counting two million devices takes a while) is never
-- skipped by a device whose cursor moved past its start time.
ALTER TABLE retractions ADD COLUMN created_xid xid8 NOT NULL DEFAULT pg_current_xact_id();

-- How many live devices received any of `refs` in the app: a retraction's
-- total. Used when a retraction is made and by `retract notification --dry-run`.
CREATE FUNCTION retract_device_count(app bigint, refs text[]) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM (
        SELECT DISTINCT token FROM deliveries WHERE app_id = app AND reference = ANY(refs)
    ) d
    WHERE NOT EXISTS (SELECT 1 FROM dead_tokens dt WHERE dt.app_id = app AND dt.token = d.token)
$$;

-- Which references a device received: the feed reads a device's own
-- references first, then the retractions that name any of them. (On a large
-- ledger, this index build blocks writes to deliveries while it runs: see
-- docs/operations.md, "Upgrading".)
CREATE INDEX deliveries_by_device ON deliveries (app_id, token) INCLUDE (reference);
CREATE INDEX retractions_by_reference ON retractions USING gin (refs);
