-- Accounts (docs/ledger.md, "Accounts"): where one app on a phone holds
-- several accounts, a reference or label of an account is kept as U+001F,
-- the account (up to 64 bytes), U+001F, then the value; one of no account
-- as the value itself. Every index and statement keeps working on the
-- scoped form, so no column is added.
--
-- A reference of an account is up to 322 bytes. The old limit of 256 on
-- deliveries goes rather than grows: replacing a CHECK on a partitioned
-- table reads every partition under a lock that holds back every insert,
-- and Retract checks each reference before writing it (as it does labels,
-- which never had a CHECK). The retractions table is small: its selector
-- value's limit grows in place.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_reference_check;
ALTER TABLE retractions DROP CONSTRAINT retractions_selector_value_check;
ALTER TABLE retractions ADD CONSTRAINT retractions_selector_value_check CHECK (octet_length(selector_value) BETWEEN 1 AND 322);
