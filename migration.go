package ebb

import "github.com/ebb-data/ebb/migrate"

// Migrations returns the migrations of indexes off legacy tables.
func (db *DB) Migrations() *migrate.Service { return db.migrations }
