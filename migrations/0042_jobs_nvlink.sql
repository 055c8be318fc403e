-- A job may require that its whole GPUs be joined by NVLink, each to every other
-- (resources.nvlink): the scheduler places it only on such cards.
ALTER TABLE jobs ADD COLUMN nvlink BOOLEAN NOT NULL DEFAULT FALSE;
