package kafka_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/kafka"
)

type txnPayload struct {
	TxnID         string `json:"txn"`
	ProducerID    int64  `json:"pid"`
	ProducerEpoch int16  `json:"pepoch"`
}

func decodePayload(t *testing.T, p []byte) txnPayload {
	t.Helper()
	var out txnPayload
	if err := json.Unmarshal(p, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// endTxnLog records every EndTxn request the broker receives.
type endTxnLog struct {
	mu   sync.Mutex
	reqs []kmsg.EndTxnRequest
}

func (l *endTxnLog) watch(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.EndTxn), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		l.mu.Lock()
		l.reqs = append(l.reqs, *r.(*kmsg.EndTxnRequest))
		l.mu.Unlock()
		return nil, nil, false
	})
}

func (l *endTxnLog) all() []kmsg.EndTxnRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]kmsg.EndTxnRequest(nil), l.reqs...)
}

// The broker behaviour recovery relies on, checked on kfake: a producer
// that pre-committed epoch 1 dies; a new sink (another client) commits
// the open transactions with EndTxn carrying exactly the recorded
// transactional id, producer id and epoch; repeating it answers success;
// the records become visible once.
func TestRecoveryCommitsCrashedTransactions(t *testing.T) {
	c := newCluster(t)
	var log endTxnLog
	log.watch(c)
	brokers := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	sink, err := kafka.New(kafka.Options{Brokers: brokers, Topic: "t", Encoder: textEncoder{}})
	if err != nil {
		t.Fatal(err)
	}
	ws := openWriters(t, sink, "job", 2, 1)
	p1 := writeEpoch(t, ctx, mem, ws, 1, "a")
	sink.Close() // the process dies between the manifest and the commit
	if n := len(log.all()); n != 0 {
		t.Fatalf("%d EndTxn requests before recovery", n)
	}

	for round := 0; round < 2; round++ {
		again, err := kafka.New(kafka.Options{Brokers: brokers, Topic: "t", Encoder: textEncoder{}})
		if err != nil {
			t.Fatal(err)
		}
		if err := again.Commit(ctx, 1, p1); err != nil {
			t.Fatalf("round %d: commit of the recorded transactions: %v", round, err)
		}
		again.Close()
	}
	reqs := log.all()
	if len(reqs) != 4 {
		t.Fatalf("%d EndTxn requests, want 2 per round", len(reqs))
	}
	for i, r := range reqs {
		want := decodePayload(t, p1[i%2])
		if r.TransactionalID != want.TxnID || r.ProducerID != want.ProducerID || r.ProducerEpoch != want.ProducerEpoch || !r.Commit {
			t.Errorf("EndTxn %d = (%s, %d, %d, commit %v), want the recorded (%s, %d, %d, commit)",
				i, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit, want.TxnID, want.ProducerID, want.ProducerEpoch)
		}
	}
	got, _ := readCommitted(t, brokers, "t")
	sameValues(t, "after recovery", got, []string{"a-0", "a-1"})
}

// Once the broker aborted a pre-committed transaction (here: a new
// producer took its transactional id, as Recover or a reused id does; or
// its timeout expired), committing it reports an AbortedEpochError naming
// the subtasks, never success.
func TestAbortedTransactionsAreReported(t *testing.T) {
	for _, how := range []string{"fenced", "timeout"} {
		t.Run(how, func(t *testing.T) {
			c := newCluster(t)
			brokers := c.ListenAddrs()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			opts := kafka.Options{Brokers: brokers, Topic: "t", Encoder: textEncoder{}}
			if how == "timeout" {
				opts.TransactionTimeout = 300 * time.Millisecond
			}
			sink, err := kafka.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			ws := openWriters(t, sink, "job", 2, 1)
			p1 := writeEpoch(t, ctx, mem, ws, 1, "a")
			sink.Close()
			switch how {
			case "fenced":
				again, err := kafka.New(opts)
				if err != nil {
					t.Fatal(err)
				}
				if err := again.Recover(ctx, "job", 0); err != nil {
					t.Fatal(err)
				}
				again.Close()
			case "timeout":
				time.Sleep(time.Second)
			}
			again, err := kafka.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			err = again.Commit(ctx, 1, p1)
			var ae *arrowflow.AbortedEpochError
			if !errors.As(err, &ae) || !errors.Is(err, arrowflow.ErrEpochAborted) {
				t.Fatalf("commit of aborted transactions: %v, want an AbortedEpochError", err)
			}
			if len(ae.Aborted) != 2 || len(ae.Committed) != 0 {
				t.Fatalf("aborted %v, committed %v; want both subtasks aborted", ae.Aborted, ae.Committed)
			}
			if !errors.Is(err, kerr.InvalidTxnState) && !errors.Is(err, kerr.ProducerFenced) {
				t.Errorf("reason %v, want INVALID_TXN_STATE or PRODUCER_FENCED", ae.Reason)
			}
			got, _ := readCommitted(t, brokers, "t")
			sameValues(t, "aborted output", got, nil)
		})
	}
}
