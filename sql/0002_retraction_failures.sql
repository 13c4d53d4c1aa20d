-- Why pushes of a retraction failed for good, one row per reason (APNs's
-- reason, or "retries exhausted: ..."), for the final account.
CREATE TABLE retraction_failures (
    retraction_id uuid   NOT NULL REFERENCES retractions (id) ON DELETE CASCADE,
    reason        text   NOT NULL,
    devices       bigint NOT NULL CHECK (devices > 0),
    PRIMARY KEY (retraction_id, reason)
);
