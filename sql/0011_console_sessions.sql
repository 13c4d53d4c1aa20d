-- Sign-ins to the moderation console (`retract serve` at /console). The
-- browser holds a random session id in an HttpOnly cookie; the ledger keeps
-- only its SHA-256, the API key it signed in with (never the key itself) and
-- the form token that every POST must carry. A revoked or deleted key ends
-- its sessions: each request reads the key again. Kept in the ledger, not in
-- one process's memory, so every `retract serve` of a deployment knows them.
CREATE TABLE console_sessions (
    id_hash    bytea       PRIMARY KEY CHECK (octet_length(id_hash) = 32),
    key_id     uuid        NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    form_token text        NOT NULL CHECK (length(form_token) BETWEEN 32 AND 128),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);
