-- Quiet carriers (docs/payload.md, "Delivery modes"): how an app's alert
-- carriers of retractions and edits interrupt on iOS 15 and later.
-- `passive` (`"interruption-level":"passive"`, `"relevance-score":0`) adds
-- them to the notification list without lighting the screen or playing a
-- sound; `active` leaves the level out, as carriers were sent before. A
-- constant default: adding the column touches no row.
ALTER TABLE apps ADD COLUMN carrier_interruption_level text NOT NULL DEFAULT 'passive'
    CHECK (carrier_interruption_level IN ('passive', 'active'));
