// Package parallel runs a batch of independent requests with bounded
// concurrency, the shape every remote backend needs for BatchWriteItem
// chunks, per-partition statements and the like.
package parallel

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// Run runs tasks, at most limit at a time, and returns the first error;
// the first failure cancels the context of the tasks still running and
// starts no more. It returns only after every task it started has
// returned. When ctx ends before every task was started, it returns ctx's
// cause.
func Run(ctx context.Context, limit int, tasks []func(context.Context) error) error {
	if len(tasks) == 1 {
		return tasks[0](ctx)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	started := 0
	for _, task := range tasks {
		if gctx.Err() != nil {
			break
		}
		started++
		g.Go(func() error { return task(gctx) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if started < len(tasks) {
		return context.Cause(ctx)
	}
	return nil
}
