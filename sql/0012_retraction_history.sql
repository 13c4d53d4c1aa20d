-- Cumulative retraction pushes (docs/engine.md, "Recent retractions ride
-- along"): each push to a device also carries the references retracted for it
-- recently, so whichever push reaches the phone last is enough. A retraction
-- counts the earlier references its pushes carried, and those left out for
-- want of room in a body.
ALTER TABLE retractions
    ADD COLUMN history_carried bigint NOT NULL DEFAULT 0 CHECK (history_carried >= 0),
    ADD COLUMN history_left_out bigint NOT NULL DEFAULT 0 CHECK (history_left_out >= 0);
