-- The newest XID of every GPU (DCGM_FI_DEV_XID_ERRORS on /metrics) is read on every
-- scrape; a partial index holds only the rare samples that carry XIDs, so the read
-- stays small however many raw samples there are.
CREATE INDEX telemetry_samples_xid ON telemetry_samples (resolution, at) WHERE xid_count > 0;
