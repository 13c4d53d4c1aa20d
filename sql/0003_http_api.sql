-- What the HTTP API needs: idempotency records, and the indexes behind the
-- per-device reconciliation feed (GET /v1/devices/{token}/retractions).

-- The first answer to a POST that carried an Idempotency-Key, per API key.
-- A row without a status is a request still running; one left behind by a
-- crashed process is taken over after a minute. Kept a day (retention pass).
CREATE TABLE idempotency_records (
    api_key_id   uuid   NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    key          text   NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_hash bytea  NOT NULL,
    status       integer,
    body         bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (api_key_id, key)
);
CREATE INDEX idempotency_records_by_age ON idempotency_records (created_at);

-- Which references a device received: the feed reads a device's own
-- references first, then the retractions that name any of them.
CREATE INDEX deliveries_by_device ON deliveries (app_id, token) INCLUDE (reference);
CREATE INDEX retractions_by_reference ON retractions USING gin (refs);
