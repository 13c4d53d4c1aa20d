-- The day goes into the device index, after the token: a probe by app, token
-- and days then has one index made for it. Without it, the primary key
-- (app, reference, token, day) is the only index holding every column such a
-- probe reads, and PostgreSQL without statistics for an app chose it, reading
-- all the app's deliveries for each token (docs/performance.md). Reads by app
-- and token alone use the new index as they used the old. Built before the old
-- one is dropped: the build blocks writes to deliveries while it runs, the drop
-- then blocks reads of deliveries until the migration commits (see
-- docs/operations.md, "Upgrading"). Apart from 0013 so that retractions is not
-- locked while the index is built.
CREATE INDEX deliveries_by_device_and_day ON deliveries (app_id, token, sent_on) INCLUDE (reference);
DROP INDEX deliveries_by_device;
ALTER INDEX deliveries_by_device_and_day RENAME TO deliveries_by_device;
