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
