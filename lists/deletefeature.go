package lists

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// DeleteFeature deletes every version of a list feature of an entity
// type, with every list of each: for each version, its table is dropped
// and its records deleted, as DeleteFeatureVersion does. It returns the
// versions it deleted, sorted; none when the feature has no version, which
// is not an error, so that a retry after a failure part-way finishes the
// job. Versions are found by their records and by their tables' claims,
// so a version whose create or delete was interrupted is cleaned up too.
// A version created while DeleteFeature runs may survive it.
func (s *Service) DeleteFeature(ctx context.Context, entityType, feature string) ([]string, error) {
	if err := checkName("entity type", entityType, false); err != nil {
		return nil, err
	}
	if err := checkName("feature name", feature, false); err != nil {
		return nil, err
	}
	versions := map[string]bool{}
	records, err := s.meta.List(ctx, kindFeature)
	if err != nil {
		return nil, fmt.Errorf("lists: delete feature %q of %q: %w", feature, entityType, err)
	}
	for key := range records {
		if v, ok := versionOf(key, entityType, feature); ok {
			versions[v] = true
		}
	}
	claims, err := s.meta.List(ctx, kindTable)
	if err != nil {
		return nil, fmt.Errorf("lists: delete feature %q of %q: %w", feature, entityType, err)
	}
	for _, owner := range claims {
		if v, ok := versionOf(string(owner), entityType, feature); ok {
			versions[v] = true
		}
	}
	deleted := make([]string, 0, len(versions))
	for v := range versions {
		err := s.DeleteFeatureVersion(ctx, FeatureID{EntityType: entityType, Feature: feature, Version: v})
		switch {
		case err == nil:
			deleted = append(deleted, v)
		case !errors.Is(err, ErrFeatureNotFound):
			return nil, err
		}
	}
	slices.Sort(deleted)
	if len(deleted) > 0 {
		s.log.Info("list feature deleted with every version", "entity_type", entityType, "feature", feature, "versions", len(deleted))
	}
	return deleted, nil
}

// versionOf returns the version a feature's meta key names when the key
// is one of the feature (entityType, feature).
func versionOf(key, entityType, feature string) (string, bool) {
	var k [3]string
	if err := json.Unmarshal([]byte(key), &k); err != nil || k[0] != entityType || k[1] != feature {
		return "", false
	}
	return k[2], true
}
