-- What the moderation console reads (docs/ledger.md, "Migration 0010"):
-- the audit log of every app, newest first, a page at a time. Without this
-- index each page of the whole log sorts every entry; with it, a page reads
-- its own entries from the cursor on. (Pages of some apps read
-- audit_log_by_app.) The audit log gains a row per action, not per
-- delivery: this costs nothing on the ingest path.
CREATE INDEX audit_log_by_time ON audit_log (at, id);
