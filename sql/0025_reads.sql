-- Reads (docs/ledger.md, "Reads"): a recipient read a conversation up to a
-- point on one device, and its other devices remove what they were sent of
-- it up to there. A read writes no retraction, no audit row and no work
-- item: it lists what each device must remove in the device feed (rows of
-- `device_feed` under the read's own id and transaction, as a retraction's),
-- and keeps one mark per device and conversation here, which the engine's
-- read courier claims and pushes.

-- A recipient's deliveries of one conversation in send order: what a read
-- takes is one range of it. Partial, as the label indexes of 0007 are: a
-- delivery without both labels costs nothing more to record.
CREATE INDEX deliveries_by_reader ON deliveries (app_id, recipient, thread, sent_at)
    WHERE recipient IS NOT NULL AND thread IS NOT NULL;

-- One row per device and conversation it was told (or is to be told) was
-- read. Reads of the same conversation that come before the push goes out
-- fold into the row (`generation` counts them): one push per device, for
-- the newest point.
CREATE TABLE read_marks (
    app_id        bigint         NOT NULL,
    token         bytea          NOT NULL,
    -- The conversation as the ledger keeps it (within its account, as
    -- deliveries' thread labels are).
    thread        text           NOT NULL,
    transport     push_transport NOT NULL,
    -- The newest send time read on this device: a later read takes only
    -- deliveries sent after it.
    read_up_to    timestamptz    NOT NULL,
    -- What the pushes carry, newest first: the references read here,
    -- the recent ones kept (at most 200) so that a later push carries them
    -- again, as earlier retractions ride along.
    refs          text[]         NOT NULL,
    -- The app icon's badge the backend gave with the newest read.
    badge         integer        CHECK (badge >= 0),
    -- Whether a push is owed for this row.
    pending       boolean        NOT NULL DEFAULT true,
    generation    bigint         NOT NULL DEFAULT 1,
    attempts      integer        NOT NULL DEFAULT 0,
    due_at        timestamptz    NOT NULL DEFAULT now(),
    claimed_until timestamptz,
    -- The transaction of the newest read: its place in the device feed.
    fed_xid       xid8           NOT NULL,
    updated_at    timestamptz    NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, token, thread)
);

-- What the courier claims: the rows owing a push, oldest due first.
CREATE INDEX read_marks_due ON read_marks (due_at) WHERE pending;
-- The newest place a read took in an app's feed (the feed's memory reads it).
CREATE INDEX read_marks_place ON read_marks (app_id, fed_xid);
-- Retention: rows untouched for longer than deliveries are kept go.
CREATE INDEX read_marks_age ON read_marks (updated_at);
