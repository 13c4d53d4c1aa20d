-- The ledger: apps, who received what, dead tokens, retractions, the work
-- queue, API keys and the audit log. Applied by `retract migrate` inside one
-- transaction; see docs/ledger.md for why each table looks as it does.

CREATE TABLE apps (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name             text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    topic            text NOT NULL CHECK (length(topic) BETWEEN 1 AND 255),
    environment      text NOT NULL CHECK (environment IN ('sandbox', 'production')),
    -- An https base URL that replaces the environment's (the simulator, a proxy).
    endpoint         text CHECK (endpoint ~ '^https://'),
    dialect          text NOT NULL DEFAULT 'canonical' CHECK (dialect IN ('canonical', 'legacy')),
    -- Where the credentials are, never the credentials themselves.
    auth_kind        text NOT NULL CHECK (auth_kind IN ('token', 'certificate')),
    key_id           text CHECK (key_id ~ '^[A-Z0-9]{10}$'),
    team_id          text CHECK (team_id ~ '^[A-Z0-9]{10}$'),
    key_path         text,
    certificate_path text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (
        (auth_kind = 'token' AND key_id IS NOT NULL AND team_id IS NOT NULL AND key_path IS NOT NULL
            AND certificate_path IS NULL)
        OR (auth_kind = 'certificate' AND certificate_path IS NOT NULL
            AND key_id IS NULL AND team_id IS NULL AND key_path IS NULL)
    )
);

-- One row per (app, reference, device token, day). Partitioned by day so that
-- retention drops whole partitions; the store creates each day's partition
-- before it first writes to it. No foreign key to apps: apps are never
-- deleted, and a check per row would slow the ingest path.
CREATE TABLE deliveries (
    app_id    bigint      NOT NULL,
    reference text        NOT NULL CHECK (octet_length(reference) BETWEEN 1 AND 256),
    token     bytea       NOT NULL CHECK (octet_length(token) BETWEEN 1 AND 128),
    sent_on   date        NOT NULL,
    sent_at   timestamptz NOT NULL,
    PRIMARY KEY (app_id, reference, token, sent_on)
) PARTITION BY RANGE (sent_on);

-- Creates the partition of deliveries that holds `day`, unless it exists.
-- Serialised by a transaction-level advisory lock, so concurrent writers
-- cannot race to create the same table.
CREATE FUNCTION retract_ensure_delivery_partition(day date) RETURNS void
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
END
$$;

-- Tokens APNs answered 410 or BadDeviceToken/DeviceTokenNotForTopic for,
-- with the earliest time APNs gave. Reads skip them from then on.
CREATE TABLE dead_tokens (
    app_id      bigint      NOT NULL REFERENCES apps (id),
    token       bytea       NOT NULL,
    dead_since  timestamptz NOT NULL,
    reason      text        NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, token)
);

CREATE TABLE retractions (
    id              uuid PRIMARY KEY,
    app_id          bigint  NOT NULL REFERENCES apps (id),
    refs            text[]  NOT NULL CHECK (cardinality(refs) BETWEEN 1 AND 1000),
    requested_by    text    NOT NULL,
    reason          text,
    dry_run         boolean NOT NULL DEFAULT false,
    state           text    NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'sending', 'done', 'failed')),
    failure         text,
    -- Devices found when the retraction was made, and what became of them.
    total           bigint NOT NULL DEFAULT 0 CHECK (total >= 0),
    sent            bigint NOT NULL DEFAULT 0 CHECK (sent >= 0),
    dead            bigint NOT NULL DEFAULT 0 CHECK (dead >= 0),
    retrying        bigint NOT NULL DEFAULT 0 CHECK (retrying >= 0),
    failed          bigint NOT NULL DEFAULT 0 CHECK (failed >= 0),
    idempotency_key text,
    request_hash    bytea,
    created_at      timestamptz NOT NULL DEFAULT now(),
    started_at      timestamptz,
    finished_at     timestamptz,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (app_id, idempotency_key)
);
CREATE INDEX retractions_by_app ON retractions (app_id, created_at DESC);

-- Work to do for retractions. A `page` item covers the retraction's devices
-- with after_token < token <= through_token (NULL: unbounded), so a retraction
-- of millions of devices starts with one row; a `push` item is one device to
-- send to again. Claimed with FOR UPDATE SKIP LOCKED: claiming moves
-- `run_after` to the end of the lease and sets `claim`, so a crashed worker's
-- items become due again when the lease ends, and only the current claim can
-- complete or release an item.
CREATE TABLE work_items (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    retraction_id uuid   NOT NULL REFERENCES retractions (id) ON DELETE CASCADE,
    kind          text   NOT NULL CHECK (kind IN ('page', 'push')),
    after_token   bytea,
    through_token bytea,
    token         bytea,
    refs          text[],
    attempts      integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    run_after     timestamptz NOT NULL DEFAULT now(),
    claim         uuid,
    claimed_by    text,
    last_error    text,
    CHECK (kind = 'page' OR (token IS NOT NULL AND refs IS NOT NULL AND after_token IS NULL AND through_token IS NULL))
);
CREATE INDEX work_items_due ON work_items (run_after, id);
CREATE INDEX work_items_by_retraction ON work_items (retraction_id);

CREATE TABLE api_keys (
    id          uuid PRIMARY KEY,
    name        text   NOT NULL,
    -- SHA-256 of the key; the key itself is shown once and never stored.
    key_hash    bytea  NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
    scopes      text[] NOT NULL
                CHECK (cardinality(scopes) >= 1
                       AND scopes <@ ARRAY['admin', 'record', 'send', 'retract', 'read', 'client']),
    created_by  text   NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

-- The apps a key may touch; an admin key without rows here touches every app.
CREATE TABLE api_key_apps (
    key_id uuid   NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    app_id bigint NOT NULL REFERENCES apps (id),
    PRIMARY KEY (key_id, app_id)
);

-- Who did what: retractions asked for, apps registered, keys made or revoked.
CREATE TABLE audit_log (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      timestamptz NOT NULL DEFAULT now(),
    actor   text  NOT NULL,
    action  text  NOT NULL,
    app_id  bigint REFERENCES apps (id),
    subject text,
    details jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_by_app ON audit_log (app_id, at);
