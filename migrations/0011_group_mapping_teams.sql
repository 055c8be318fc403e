-- An identity-provider group may map to a role in every project of a team, not only
-- in one project: team_id is set instead of project_id.
ALTER TABLE group_mappings ADD COLUMN team_id BIGINT REFERENCES teams (id);
