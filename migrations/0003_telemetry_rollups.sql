-- Telemetry roll-ups keep min/avg/max of every gauge, how many raw samples a row
-- stands for (to weight averages when 1-minute rows roll up to 1-hour rows), which
-- measurements the device reported (a bitmask, so an unreported gauge is not read as 0),
-- and the last XID code seen (what DCGM_FI_DEV_XID_ERRORS exposes).
ALTER TABLE telemetry_samples ADD COLUMN samples INTEGER NOT NULL DEFAULT 1;
ALTER TABLE telemetry_samples ADD COLUMN reported INTEGER NOT NULL DEFAULT 0;
ALTER TABLE telemetry_samples ADD COLUMN mem_min_mib BIGINT NOT NULL DEFAULT 0;
ALTER TABLE telemetry_samples ADD COLUMN temp_min_c {{real}} NOT NULL DEFAULT 0;
ALTER TABLE telemetry_samples ADD COLUMN temp_max_c {{real}} NOT NULL DEFAULT 0;
ALTER TABLE telemetry_samples ADD COLUMN power_min_w {{real}} NOT NULL DEFAULT 0;
ALTER TABLE telemetry_samples ADD COLUMN power_max_w {{real}} NOT NULL DEFAULT 0;
ALTER TABLE telemetry_samples ADD COLUMN sm_clock_min_mhz BIGINT NOT NULL DEFAULT 0;
ALTER TABLE telemetry_samples ADD COLUMN sm_clock_max_mhz BIGINT NOT NULL DEFAULT 0;
ALTER TABLE telemetry_samples ADD COLUMN nvlink_max_mbps {{real}} NOT NULL DEFAULT 0;
ALTER TABLE telemetry_samples ADD COLUMN pcie_max_mbps {{real}} NOT NULL DEFAULT 0;
ALTER TABLE telemetry_samples ADD COLUMN last_xid INTEGER NOT NULL DEFAULT 0;
