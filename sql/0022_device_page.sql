-- A page of a retraction's devices (docs/ledger.md, "Reading the devices of
-- a retraction"): for each reference, its deliveries after `lower` and up to
-- `upper` in token order, at most `page` each, with the time the token was
-- found dead. Planned without sorts and bitmap scans, so that each day
-- partition's primary key is read in token order and each scan stops after
-- the page's rows. Planned freely, PostgreSQL sorted instead whenever it
-- expected fewer rows past the cursor than the page holds, which it does for
-- a broadcast (each reference, a value of the lateral join, is estimated as
-- the table's average reference, a chat message's devices), and each page
-- then read the rest of the reference.
CREATE FUNCTION retract_device_page(app bigint, refs text[], lower bytea, upper bytea, page bigint)
RETURNS TABLE (reference text, token bytea, is_fcm boolean, sent_at timestamptz, dead_since timestamptz, collapse_id text)
LANGUAGE sql STABLE STRICT
SET enable_sort = off
SET enable_bitmapscan = off
AS $$
    -- Parameters named with the function's name: a column of the same name would take precedence over a bare one.
    SELECT d.reference, d.token, d.transport = 'fcm', d.sent_at,
           (SELECT dt.recorded_at FROM dead_tokens dt
            WHERE dt.app_id = retract_device_page.app AND dt.token = d.token), d.collapse_id
    FROM unnest(retract_device_page.refs) AS r (ref)
    CROSS JOIN LATERAL (
        SELECT x.reference, x.token, x.transport, x.sent_at, x.collapse_id FROM deliveries x
        WHERE x.app_id = retract_device_page.app AND x.reference = r.ref
          AND x.token > retract_device_page.lower AND x.token <= retract_device_page.upper
        ORDER BY x.token
        LIMIT retract_device_page.page
    ) d
$$;
