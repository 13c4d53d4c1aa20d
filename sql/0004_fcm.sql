-- Firebase Cloud Messaging: an app may reach its devices through FCM as well
-- as (or instead of) APNs, and each delivery records which service took it,
-- so a retraction reaches each device the way its original went.

CREATE TYPE push_transport AS ENUM ('apns', 'fcm');

-- Where the app's service-account JSON file is, never the file itself.
ALTER TABLE apps ADD COLUMN fcm_service_account_path text CHECK (fcm_service_account_path <> '');

-- An app that reaches its devices only through FCM has no APNs credentials.
ALTER TABLE apps DROP CONSTRAINT apps_auth_kind_check;
ALTER TABLE apps ADD CONSTRAINT apps_auth_kind_check CHECK (auth_kind IN ('token', 'certificate', 'none'));
ALTER TABLE apps DROP CONSTRAINT apps_check;
ALTER TABLE apps ADD CONSTRAINT apps_check CHECK (
    (auth_kind = 'token' AND key_id IS NOT NULL AND team_id IS NOT NULL AND key_path IS NOT NULL
        AND certificate_path IS NULL)
    OR (auth_kind = 'certificate' AND certificate_path IS NOT NULL
        AND key_id IS NULL AND team_id IS NULL AND key_path IS NULL)
    OR (auth_kind = 'none' AND fcm_service_account_path IS NOT NULL
        AND key_id IS NULL AND team_id IS NULL AND key_path IS NULL AND certificate_path IS NULL)
);

-- A constant default: adding the column rewrites nothing, and every delivery
-- recorded so far went through APNs.
ALTER TABLE deliveries ADD COLUMN transport push_transport NOT NULL DEFAULT 'apns';

-- FCM registration tokens are text of about 160 bytes and Google sets no
-- limit: the ledger now keeps tokens of up to 512 bytes. Adding the check
-- reads every delivery once (see docs/operations.md, "Upgrading").
ALTER TABLE deliveries DROP CONSTRAINT deliveries_token_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_token_check CHECK (octet_length(token) BETWEEN 1 AND 512);

-- A device to send to again keeps the service it is reached through.
ALTER TABLE work_items ADD COLUMN transport push_transport NOT NULL DEFAULT 'apns';
