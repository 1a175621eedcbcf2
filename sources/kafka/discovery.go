package kafka

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// discoveredOwner is the subtask that adopts a partition found while the
// job runs (one that was not in the split list when the job started): the
// FNV-1a hash of its split id "topic/partition" modulo the parallelism.
// Every subtask computes the same owner on its own, so each new partition
// is read by exactly one of them, without coordination.
func discoveredOwner(split string, parallelism int) int {
	h := fnv.New32a()
	h.Write([]byte(split))
	return int(h.Sum32() % uint32(parallelism))
}

// discovered is a partition discovery found for its reader, with the
// offset it starts at (the log start, as in Flink).
type discovered struct {
	tp    Partition
	start int64
}

// discovery looks for new partitions in the background, every interval,
// and hands those its reader owns over the found channel.
type discovery struct {
	found  chan []discovered
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startDiscovery(rd *reader, interval time.Duration, known map[string]bool) *discovery {
	ctx, cancel := context.WithCancel(context.Background())
	d := &discovery{found: make(chan []discovered, 1), cancel: cancel}
	src, adm, logger := rd.src, kadm.NewClient(rd.cl), rd.logger
	subtask, par := rd.subtask, rd.par
	d.wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			found, err := findNew(ctx, src, adm, known, subtask, par)
			if err != nil {
				if ctx.Err() == nil {
					logger.Warn("kafka source: partition discovery failed; trying again at the next interval", "err", err)
				}
				continue
			}
			if len(found) == 0 {
				continue
			}
			select {
			case d.found <- found:
				for _, f := range found {
					known[f.tp.String()] = true
				}
			case <-ctx.Done():
				return
			}
		}
	})
	return d
}

// findNew lists the topics' partitions and returns those not known yet
// that subtask owns, each with its log start offset. known is read only.
func findNew(ctx context.Context, src *Source, adm *kadm.Client, known map[string]bool, subtask, par int) ([]discovered, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	parts, err := src.partitions(ctx, adm)
	if err != nil {
		return nil, err
	}
	var mine []Partition
	for _, p := range parts {
		id := p.String()
		if !known[id] && discoveredOwner(id, par) == subtask {
			mine = append(mine, p)
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	l := newOffsetLister(&src.opts, adm, mine)
	out := make([]discovered, 0, len(mine))
	for _, p := range mine {
		start, err := l.list(ctx, "earliest", p)
		if err != nil {
			return nil, err
		}
		out = append(out, discovered{tp: p, start: start})
	}
	return out, nil
}

// poll returns what discovery found since the last call, without waiting.
func (d *discovery) poll() []discovered {
	select {
	case f := <-d.found:
		return f
	default:
		return nil
	}
}

// stop ends the discovery goroutine and waits for it.
func (d *discovery) stop() {
	d.cancel()
	d.wg.Wait()
}
