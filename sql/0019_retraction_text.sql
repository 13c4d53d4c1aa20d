-- A retraction's own alert text (docs/api.md, `text`): what its alerts show in
-- the service-extension (without the filtering entitlement) and replace modes,
-- instead of its app's retraction text. NULL: the app's, read when it is sent.
-- Late retractions of its references and labels take it too.
ALTER TABLE retractions ADD COLUMN text text;
