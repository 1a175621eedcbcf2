// Package ctxsleep sleeps until a duration passes or a context ends.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits for d, or until ctx is done: then it returns ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
