-- A Slurm pool whose slurm.conf reaches another cluster than the one its open jobs are
-- on stands still until it reaches theirs again or an admin forgets them: one row per
-- such pool (models.SlurmClusterMove), written by the leader when it finds the pool so
-- and deleted once the pool reads its cluster without trouble. It was told by the text
-- of its nodes' reason. last_seen_at: the leader's last poll of the jobs' cluster.
CREATE TABLE slurm_cluster_moves (
    pool_id BIGINT PRIMARY KEY REFERENCES node_pools (id),
    jobs_cluster TEXT NOT NULL,
    conf_cluster TEXT NOT NULL,
    reason TEXT NOT NULL,
    found_at {{ts}} NOT NULL,
    last_seen_at {{ts}} NOT NULL
);
