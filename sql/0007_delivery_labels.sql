-- What a delivery may carry besides its reference, for retraction by
-- conversation, sender, recipient or campaign (docs/ledger.md, "Delivery
-- labels"): the conversation it belongs to (`thread`), who wrote it
-- (`sender`), the user the device belongs to (`recipient`) and a `campaign`
-- label. The app's own ids, 1 to 256 bytes, checked by Retract before
-- writing. Columns without a default or a CHECK: adding them touches no row.
ALTER TABLE deliveries
    ADD COLUMN thread text,
    ADD COLUMN sender text,
    ADD COLUMN recipient text,
    ADD COLUMN campaign text;

-- One partial index per label, in the order a retraction pages through its
-- devices (token order within the app and the value). A delivery without
-- the label is not in the index, so recording costs nothing more when
-- labels are absent. Created on every partition; on a ledger that already
-- holds deliveries, each partition is read once (its rows all lack the
-- labels, so nothing is indexed) under a lock that holds back inserts for
-- as long.
CREATE INDEX deliveries_by_thread ON deliveries (app_id, thread, token) WHERE thread IS NOT NULL;
CREATE INDEX deliveries_by_sender ON deliveries (app_id, sender, token) WHERE sender IS NOT NULL;
CREATE INDEX deliveries_by_recipient ON deliveries (app_id, recipient, token) WHERE recipient IS NOT NULL;
CREATE INDEX deliveries_by_campaign ON deliveries (app_id, campaign, token) WHERE campaign IS NOT NULL;

-- A retraction by selector names no references: it takes every delivery of
-- the app with one label, sent within [sent_after, sent_before). sent_before
-- is the time the retraction was made unless the caller gave an earlier
-- one, so a message sent after it is never taken; sent_after NULL means from
-- the start of retention.
ALTER TABLE retractions
    ADD COLUMN selector_kind text CHECK (selector_kind IN ('thread', 'sender', 'recipient', 'campaign')),
    ADD COLUMN selector_value text CHECK (octet_length(selector_value) BETWEEN 1 AND 256),
    ADD COLUMN sent_after timestamptz,
    ADD COLUMN sent_before timestamptz,
    -- How many references the selector matched when the retraction was made.
    ADD COLUMN matched_refs bigint CHECK (matched_refs >= 0),
    -- Pushes sent, and the most one device needed (several when its
    -- references do not fit one body, or the legacy dialect's one per reference).
    ADD COLUMN pushes bigint NOT NULL DEFAULT 0 CHECK (pushes >= 0),
    ADD COLUMN most_pushes integer NOT NULL DEFAULT 0 CHECK (most_pushes >= 0),
    -- Dry runs: the most references one device would be sent.
    ADD COLUMN most_refs integer CHECK (most_refs >= 0);
ALTER TABLE retractions DROP CONSTRAINT retractions_refs_check;
ALTER TABLE retractions ADD CONSTRAINT retractions_target_check CHECK (
    (selector_kind IS NULL AND selector_value IS NULL AND sent_after IS NULL AND sent_before IS NULL
        AND cardinality(refs) BETWEEN 1 AND 1000)
    OR (selector_kind IS NOT NULL AND selector_value IS NOT NULL AND sent_before IS NOT NULL AND cardinality(refs) = 0
        AND (sent_after IS NULL OR sent_after < sent_before))
);

-- What a delivery recorded later looks up: the retractions by selector of
-- its labels (the late-delivery rule).
CREATE INDEX retractions_by_selector ON retractions (app_id, selector_kind, selector_value, created_at DESC)
    WHERE selector_kind IS NOT NULL AND NOT dry_run;
