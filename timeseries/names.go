package timeseries

import "context"

// The library and package client name the operations on events as the
// HTTP API does (WriteEvents, QueryEvents); these are the names they had
// before, kept so that code written against them still builds.

// Put is WriteEvents.
//
// Deprecated: use WriteEvents, the name package client and the HTTP API
// use.
func (s *Service) Put(ctx context.Context, index string, events []Event) (int, error) {
	return s.WriteEvents(ctx, index, events)
}

// Query is QueryEvents.
//
// Deprecated: use QueryEvents, the name package client and the HTTP API
// use.
func (s *Service) Query(ctx context.Context, index string, q Query) (Page, error) {
	return s.QueryEvents(ctx, index, q)
}
