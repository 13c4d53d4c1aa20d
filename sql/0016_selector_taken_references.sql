-- What a retraction by selector took, as references: the distinct references
-- of the deliveries its label and range matched when it was made, and the
-- days they were sent on (as 0013 keeps for retractions by reference). A
-- later retraction's pushes carry them to each device that received them
-- (docs/payload.md, "Earlier retractions ride along"), read from the device
-- index alone, as the references of retractions by reference are. NULL for
-- retractions by reference (their refs say it), and for dry runs.
ALTER TABLE retractions ADD COLUMN taken_refs text[];

-- Retractions by selector made in the last week (the longest --history-hours)
-- before this migration: what they took then, as far as the ledger still
-- holds it. Older ones no longer ride along.
UPDATE retractions r
SET taken_refs = t.refs, delivered_from = coalesce(r.delivered_from, t.first_day),
    delivered_through = coalesce(r.delivered_through, t.last_day)
FROM (
    SELECT r.id, array_agg(DISTINCT d.reference) AS refs, min(d.sent_on) AS first_day, max(d.sent_on) AS last_day
    FROM retractions r
    JOIN deliveries d ON d.app_id = r.app_id
     AND CASE r.selector_kind WHEN 'thread' THEN d.thread WHEN 'sender' THEN d.sender
                              WHEN 'recipient' THEN d.recipient ELSE d.campaign END = r.selector_value
     AND d.sent_at >= coalesce(r.sent_after, '-infinity') AND d.sent_at < r.sent_before
    WHERE r.selector_kind IS NOT NULL AND NOT r.dry_run AND r.created_at >= now() - interval '7 days'
    GROUP BY r.id
) t
WHERE r.id = t.id;
