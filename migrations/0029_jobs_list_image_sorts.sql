-- The jobs list filtered by image (a catalog image or a reference) sorted by name or
-- GPUs reads the image's jobs in index order. Without these SQLite read every job of
-- the image and sorted them (at 100,000 jobs of one image, 100,000 a page).
-- A job's image never changes: these cost a write per job submitted (and on
-- PostgreSQL per state change, as no update of a job's state is HOT).
CREATE INDEX jobs_image_name ON jobs (image_id, name, id);
CREATE INDEX jobs_image_gpus ON jobs (image_id, gpus, id);
CREATE INDEX jobs_image_ref_name ON jobs (image_ref, name, id);
CREATE INDEX jobs_image_ref_gpus ON jobs (image_ref, gpus, id);
