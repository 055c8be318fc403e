package store

import "fmt"

// MissingColumns lists the fields of model that have no column in its table.
func (s *Store) MissingColumns(model any) ([]string, error) {
	stmt := s.db.Model(model).Statement
	if err := stmt.Parse(model); err != nil {
		return nil, fmt.Errorf("parse model: %w", err)
	}
	if !s.db.Migrator().HasTable(stmt.Schema.Table) {
		return nil, fmt.Errorf("no table %s", stmt.Schema.Table)
	}
	var missing []string
	for _, f := range stmt.Schema.Fields {
		if f.DBName != "" && !s.db.Migrator().HasColumn(model, f.DBName) {
			missing = append(missing, f.DBName)
		}
	}
	return missing, nil
}
