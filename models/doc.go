// Package models holds Gantry's gorm models: plain structs with small invariants.
// It imports nothing of Gantry's; columns change only through migrations.
package models
