-- The days (the deliveries' sent_on) a retraction's references were delivered
-- on, when it was made; for a retraction of late deliveries, theirs. Reading
-- what rides along (docs/engine.md, "Earlier retractions ride along") then
-- probes only those days' partitions of deliveries, not all of retention's.
-- NULL in both when none was found, and for retractions made before this
-- migration (with devices: those days are not known, every partition is read).
ALTER TABLE retractions
    ADD COLUMN delivered_from date,
    ADD COLUMN delivered_through date,
    ADD CHECK ((delivered_from IS NULL) = (delivered_through IS NULL) AND delivered_from <= delivered_through);

-- The day goes into the device index, after the token: a probe by app, token
-- and days then has one index made for it. Without it, the primary key
-- (app, reference, token, day) is the only index holding every column such a
-- probe reads, and PostgreSQL without statistics for an app chose it, reading
-- all the app's deliveries for each token (docs/performance.md). Reads by app
-- and token alone use the new index as they used the old. Built before the old
-- one is dropped: the build blocks writes to deliveries while it runs, the drop
-- then blocks reads only until the migration commits (see docs/operations.md,
-- "Upgrading").
CREATE INDEX deliveries_by_device_and_day ON deliveries (app_id, token, sent_on) INCLUDE (reference);
DROP INDEX deliveries_by_device;
ALTER INDEX deliveries_by_device_and_day RENAME TO deliveries_by_device;
