package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnRecord is a subtask's pre-commit payload: the open transaction that
// holds its output of one epoch.
type txnRecord struct {
	// TxnID is the transactional id, ProducerID and ProducerEpoch the
	// producer that wrote the transaction.
	TxnID         string `json:"txn"`
	ProducerID    int64  `json:"pid"`
	ProducerEpoch int16  `json:"pepoch"`
	// Records is how many records the transaction holds.
	Records int64 `json:"records"`
}

// abortedAnswer reports whether err, the broker's answer to ending a
// transaction with a producer id and epoch, means that the transaction was
// aborted (by a timeout, or by a newer producer with the same id fencing
// it): EndTxn v5 answers INVALID_TXN_STATE, earlier versions
// PRODUCER_FENCED or INVALID_PRODUCER_EPOCH.
func abortedAnswer(err error) bool {
	return errors.Is(err, kerr.InvalidTxnState) || errors.Is(err, kerr.ProducerFenced) ||
		errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.TransactionAbortable)
}

// retriableTxn reports whether a transaction coordinator answer asks to
// try again.
func retriableTxn(err error) bool {
	return errors.Is(err, kerr.ConcurrentTransactions) || errors.Is(err, kerr.CoordinatorLoadInProgress) ||
		errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable) ||
		errors.Is(err, kerr.RequestTimedOut)
}

// endTxn completes the transaction t from outside the producer that wrote
// it, as recovery must after a crash: an EndTxn request with exactly t's
// transactional id, producer id and producer epoch. It returns (true, err)
// when the broker says the transaction was aborted; a repeated commit of a
// committed transaction answers success.
func endTxn(ctx context.Context, cl *kgo.Client, t txnRecord, commit bool) (aborted bool, err error) {
	backoff := 20 * time.Millisecond
	for attempt := 0; ; attempt++ {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID = t.TxnID
		req.ProducerID = t.ProducerID
		req.ProducerEpoch = t.ProducerEpoch
		req.Commit = commit
		resp, rerr := req.RequestWith(ctx, cl)
		if rerr == nil {
			rerr = kerr.ErrorForCode(resp.ErrorCode)
			if rerr == nil {
				return false, nil
			}
			if abortedAnswer(rerr) {
				return true, rerr
			}
		}
		if ctx.Err() != nil {
			return false, fmt.Errorf("end transaction %s: %w", t.TxnID, ctx.Err())
		}
		if attempt >= 40 || (!retriableTxn(rerr) && !isNetErr(rerr)) {
			return false, fmt.Errorf("end transaction %s (producer %d, epoch %d): %w", t.TxnID, t.ProducerID, t.ProducerEpoch, rerr)
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("end transaction %s: %w", t.TxnID, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// fenceTxn aborts whatever transaction is open under the transactional id
// by initializing a new producer with it, as a restarted producer would.
func fenceTxn(ctx context.Context, cl *kgo.Client, txnID string, timeout time.Duration) error {
	backoff := 20 * time.Millisecond
	for attempt := 0; ; attempt++ {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &txnID
		req.TransactionTimeoutMillis = int32(timeout / time.Millisecond)
		req.ProducerID = -1
		req.ProducerEpoch = -1
		resp, rerr := req.RequestWith(ctx, cl)
		if rerr == nil {
			if rerr = kerr.ErrorForCode(resp.ErrorCode); rerr == nil {
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if attempt >= 40 || (!retriableTxn(rerr) && !isNetErr(rerr)) {
			return fmt.Errorf("abort transaction %s: %w", txnID, rerr)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// isNetErr reports errors of the connection rather than the broker's
// answer, worth another try.
func isNetErr(err error) bool {
	var ke *kerr.Error
	return err != nil && !errors.As(err, &ke)
}
