-- Delivery modes: how a retraction reaches a phone (docs/payload.md,
-- "Delivery modes"). `background` is the silent push iOS may hold back;
-- `service-extension` a mutable-content alert the app's Notification Service
-- Extension turns into a removal, even after a force-quit; `replace` an alert
-- with the original's collapse id, which iOS puts in the original's place
-- with no app code at all.

-- An app's default mode, and the text its alerts show.
ALTER TABLE apps ADD COLUMN retraction_mode text NOT NULL DEFAULT 'background'
    CHECK (retraction_mode IN ('background', 'service-extension', 'replace'));
ALTER TABLE apps ADD COLUMN retraction_text text NOT NULL DEFAULT 'This message was deleted'
    CHECK (octet_length(retraction_text) BETWEEN 1 AND 1024);

-- The mode one retraction is sent in, and the badge its pushes set.
ALTER TABLE retractions ADD COLUMN mode text NOT NULL DEFAULT 'background'
    CHECK (mode IN ('background', 'service-extension', 'replace'));
ALTER TABLE retractions ADD COLUMN badge integer CHECK (badge >= 0);

-- The original's apns-collapse-id (its notification identifier on an iPhone,
-- its Android notification tag): what `replace` replaces. NULL when the
-- original had none, or it was not recorded. A column without a default and
-- without a CHECK (a CHECK would make PostgreSQL read every partition under
-- its lock; Retract checks it, 1 to 64 bytes, before writing): adding it
-- touches no row.
ALTER TABLE deliveries ADD COLUMN collapse_id text;

-- A device to send to again keeps the collapse id of each of its
-- references ('' where there is none), in the order of `refs`.
ALTER TABLE work_items ADD COLUMN collapse_ids text[];

