package lists

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ebb-data/ebb/store"
)

// FeatureOfTable returns the feature version whose items table is table,
// and false when table belongs to no feature (or to one being deleted).
// It reads the reverse record written when the table was claimed, so the
// log of expirations can say which feature a removed row belonged to.
func (s *Service) FeatureOfTable(ctx context.Context, table string) (FeatureID, bool, error) {
	if !strings.HasPrefix(table, tablePrefix) {
		return FeatureID{}, false, nil
	}
	key, err := s.meta.Get(ctx, kindTable, table)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTableNotFound) {
		return FeatureID{}, false, nil
	}
	if err != nil {
		return FeatureID{}, false, fmt.Errorf("lists: owner of %s: %w", table, err)
	}
	var names [3]string
	if err := json.Unmarshal(key, &names); err != nil {
		return FeatureID{}, false, nil
	}
	return FeatureID{EntityType: names[0], Feature: names[1], Version: names[2]}, true, nil
}
